/* __neuron_call_on_stack(f, top): f() with the stack pointer at `top` (16-aligned), for
   the runtime's HBM stacks (customop-device/src/stack.rs; docs/decisions.md D79).

   In the windowed ABI a frame finds its caller's frame through its base save area, the 16
   bytes below its stack pointer, where a window overflow stores the caller's a0-a3 (a1
   among them: the caller's stack pointer, from which the overflow of an 8- or 12-register
   frame finds its extra save area). So: every older frame is first spilled to memory (a
   chain of nine call8s rotates 72 registers through the 64 of the core: none of the
   frames before this one stays in registers), the base save area is copied to below the
   new top, and the stack pointer is moved with a plain register move (MOVSP would raise an
   alloca exception, the caller's frame being spilled). While f runs, this frame's spills
   and refills go through the copy; on the way back the old stack pointer, whose save area
   still holds the caller's registers, is restored before RETW. */

__asm__(
    "\t.text\n"
    "\t.literal_position\n"
    "\t.align 4\n"
    "\t.type __neuron_spill_windows, @function\n"
    "__neuron_spill_windows:\n"          /* a2: calls left */
    "\tentry a1, 32\n"
    "\tbeqz a2, 1f\n"
    "\taddi a10, a2, -1\n"
    "\tcall8 __neuron_spill_windows\n"
    "1:\n"
    "\tretw\n"
    "\t.size __neuron_spill_windows, . - __neuron_spill_windows\n"
    "\t.align 4\n"
    "\t.global __neuron_call_on_stack\n"
    "\t.type __neuron_call_on_stack, @function\n"
    "__neuron_call_on_stack:\n"          /* a2: f, a3: top */
    "\tentry a1, 32\n"
    "\tmov a6, a2\n"
    "\tmov a7, a3\n"
    "\tmovi a10, 9\n"
    "\tcall8 __neuron_spill_windows\n"
    "\taddi a4, a1, -16\n"
    "\taddi a5, a7, -16\n"
    "\tl32i a8, a4, 0\n"
    "\tl32i a9, a4, 4\n"
    "\tl32i a10, a4, 8\n"
    "\tl32i a11, a4, 12\n"
    "\ts32i a8, a5, 0\n"
    "\ts32i a9, a5, 4\n"
    "\ts32i a10, a5, 8\n"
    "\ts32i a11, a5, 12\n"
    "\tmov a5, a1\n"
    "\tmov a1, a7\n"
    "\tcallx8 a6\n"
    "\tmov a1, a5\n"
    "\tretw\n"
    "\t.size __neuron_call_on_stack, . - __neuron_call_on_stack\n");
