// A GCC plugin for host builds of op code in the device's data model: alignment as GCC
// for Xtensa sees it (D105), and float-to-integer conversions as a Pool core computes them
// (D117).
//
// Conversions: C and C++ leave a float-to-integer conversion of NaN or of a value outside
// the target type undefined; x86 answers with its "integer indefinite" (INT_MIN, and for
// unsigned targets a wrapped value), a Pool core saturates: NaN gives 0, a value below the
// range its minimum (0 for unsigned types), one above its maximum, and a type narrower
// than 32 bits takes the low bits of the 32-bit result (measured on Xtensa cores for
// float and double to every integer width: tests/python/test_conversions.py). The pass
// turns each scalar conversion into a call of the runtime's __customop_fix_f{32,64}_{i,u}{32,64},
// which computes the core's value, then narrows. -fsanitize=float-cast-overflow still
// checks the operand first, so checking mode names the conversion as before. Conversions
// GCC folds at compile time are folded alike by both builds (saturating, NaN to 0).
//
// A Pool core faults on a 2- or 4-byte access through a misaligned address. When GCC for
// Xtensa knows at compile time that an address is misaligned (a constant offset into a
// buffer whose alignment it knows), it moves the value piecewise instead, and the device
// build runs. Host builds check every typed access at run time (-fsanitize=alignment,
// whose handler applies the device's rule), so without this plugin they fault where the
// device build runs. The plugin makes the host compiler decide as the device's does:
//  - variables of array, struct and union type are at least word-aligned, as Xtensa's
//    DATA_ALIGNMENT and LOCAL_ALIGNMENT make them (so the compiler knows what it knows
//    there: `unsigned char b[8]` starts on a word);
//  - an alignment check of a constant address (a variable's address plus a constant, as
//    the source and the early optimisers leave it) that is misaligned for the access is
//    removed: the device build moves that value piecewise (x86 reads the same bytes).
//    What the device compiler learns later (after unrolling, inlining, induction
//    variables) depends on its own optimisation level and target: the device build at
//    -Os and the host's at -O3 part ways there, so the plugin does not guess from its
//    own compiler; where the device build was compiled first (the frames table), a check
//    is also removed at a source location where that build's widest load or store is
//    narrower than the check's alignment: GCC for Xtensa moved that value in pieces it
//    knew aligned (D125). Every other check stays and faults as the device does.
//
// The stack (D118): a Pool core's stack is small (a kernel has about 7.9 KiB of local
// stack, or STACK_SIZE bytes of HBM), and its frames are not x86's: the same recursion
// takes 48 bytes a call on Xtensa cores and 32 on i386. Given the device build's frames
// (-fplugin-arg-device_rules-frames=FILE: each function's `entry` size and its direct
// calls, from the Xtensa assembly of the same source), every function keeps the device's
// running stack depth in the runtime's __customop_stack_depth: on entry it checks that
// its deepest point (its device frame, with the device frames of what it inlined that the
// device build calls) stays within __customop_stack_limit, else calls the runtime's
// __customop_device_stack_overflow (the device's stack overflow); before each call it
// sets the depth its callee starts from, and on return puts back its caller's. Functions
// the device build inlined take no frame of their own (their caller's frame holds them).
// Variable-length arrays and alloca take their bytes below the frame on both builds: the
// host's stack pointer measures them (D123).

// The standard containers, before GCC's headers poison what they use.
#define INCLUDE_MAP
#define INCLUDE_SET
#define INCLUDE_STRING
#define INCLUDE_VECTOR
#include <tuple>
#include "gcc-plugin.h"
#include "plugin-version.h"
#include "tree.h"
#include "tree-pass.h"
#include "context.h"
#include "basic-block.h"
#include "gimple.h"
#include "gimple-iterator.h"
#include "internal-fn.h"
#include "builtins.h"
#include "ssa.h"
#include "diagnostic-core.h"
#include "stringpool.h"
#include "ggc.h"
#include "gimple-ssa.h"
#include "tree-ssanames.h"
#include "cfghooks.h"
#include "tree-cfg.h"
#include "tree-into-ssa.h"
#include "varasm.h"
#include "cfgloop.h"
#include "dominance.h"

int plugin_is_GPL_compatible;

namespace {

// Xtensa's word: the alignment its GCC gives aggregates.
const unsigned int DEVICE_AGGREGATE_ALIGN = 32;

// Raises a variable definition of aggregate type to word alignment (a definition only:
// an `extern` declaration may name storage built elsewhere).
void word_align_aggregates(void *gcc_data, void *)
{
    tree decl = (tree)gcc_data;
    if (!decl || !VAR_P(decl) || DECL_EXTERNAL(decl) || DECL_USER_ALIGN(decl))
        return;
    tree type = TREE_TYPE(decl);
    if (!type || type == error_mark_node || !COMPLETE_TYPE_P(type))
        return;
    switch (TREE_CODE(type)) {
    case ARRAY_TYPE:
    case RECORD_TYPE:
    case UNION_TYPE:
    case QUAL_UNION_TYPE:
        break;
    default:
        return;
    }
    if (DECL_ALIGN(decl) < DEVICE_AGGREGATE_ALIGN)
        SET_DECL_ALIGN(decl, DEVICE_AGGREGATE_ALIGN);
}

// True when the check `stmt` (.UBSAN_NULL (ptr, kind, align)) tests a constant address
// less aligned than the access needs: GCC for a strict-alignment target moves such a
// value piecewise, at any optimisation level.
bool known_misaligned(gimple *stmt)
{
    tree ptr = gimple_call_arg(stmt, 0);
    if (!is_gimple_min_invariant(ptr))
        return false;
    tree need = gimple_call_arg(stmt, 2);
    if (!tree_fits_uhwi_p(need))
        return false;
    unsigned HOST_WIDE_INT need_bits = tree_to_uhwi(need) * BITS_PER_UNIT;
    if (need_bits <= BITS_PER_UNIT)
        return false;
    unsigned int align;
    unsigned HOST_WIDE_INT bitpos;
    if (!get_pointer_alignment_1(ptr, &align, &bitpos))
        return false;
    unsigned HOST_WIDE_INT known = bitpos ? least_bit_hwi(bitpos) : align;
    return known < need_bits;
}

// The device build's widest load or store at each source location (`W WIDTH LINE COLUMN
// FILE` in the frames table, D125), by the file's canonical path.
std::map<std::tuple<std::string, long, long>, long> device_widest;

// `file` made canonical as op-build names the table's files (the compilers share a
// folder), each looked up once.
const std::string &canonical_path(const char *file)
{
    static std::map<std::string, std::string> known;
    auto it = known.find(file);
    if (it != known.end())
        return it->second;
    char *real = lrealpath(file);
    std::string path = real ? real : file;
    free(real);
    return known.emplace(file, path).first->second;
}

// True when the device build's widest access at the check's location (file, line and
// column: the access's own expression) is narrower than the alignment the check asks
// (capped at the word a Pool core checks: wider values move as words): GCC for Xtensa
// moved the value in pieces it knew aligned, so the device build runs where this check
// would fault. A location the device build made no access at keeps its check.
bool device_narrower(gimple *stmt)
{
    if (device_widest.empty())
        return false;
    tree need = gimple_call_arg(stmt, 2);
    if (!tree_fits_uhwi_p(need))
        return false;
    unsigned HOST_WIDE_INT bytes = tree_to_uhwi(need);
    if (bytes <= 1)
        return false;
    if (bytes > 4)
        bytes = 4;
    expanded_location at = expand_location(gimple_location(stmt));
    if (!at.file)
        return false;
    auto it = device_widest.find({canonical_path(at.file), (long)at.line, (long)at.column});
    return it != device_widest.end() && (unsigned HOST_WIDE_INT)it->second < bytes;
}

const pass_data device_alignment_data = {
    GIMPLE_PASS,
    "device_alignment",
    OPTGROUP_NONE,
    TV_NONE,
    PROP_ssa | PROP_cfg,
    0,
    0,
    0,
    0,
};

class device_alignment_pass : public gimple_opt_pass {
public:
    explicit device_alignment_pass(gcc::context *ctx)
        : gimple_opt_pass(device_alignment_data, ctx)
    {
    }

    bool gate(function *) final override { return (flag_sanitize & SANITIZE_ALIGNMENT) != 0; }

    unsigned int execute(function *fun) final override
    {
        basic_block bb;
        FOR_EACH_BB_FN(bb, fun)
        {
            for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi);) {
                gimple *stmt = gsi_stmt(gsi);
                if (gimple_call_internal_p(stmt, IFN_UBSAN_NULL) &&
                    (known_misaligned(stmt) || device_narrower(stmt))) {
                    // As sanopt drops a check it proves redundant.
                    unlink_stmt_vdef(stmt);
                    gsi_remove(&gsi, true);
                    continue;
                }
                gsi_next(&gsi);
            }
        }
        return 0;
    }
};

// The runtime's conversion functions, by source width (f32, f64), signedness and target
// width (32, 64): kept across functions, so a GC root.
tree fix_decls[8];

const struct ggc_root_tab fix_decls_root[] = {
    {&fix_decls[0], 8, sizeof(tree), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node},
    LAST_GGC_ROOT_TAB,
};

tree fix_decl(unsigned from_bits, bool unsigned_to, unsigned to_bits)
{
    unsigned i = (from_bits == 64) * 4 + unsigned_to * 2 + (to_bits == 64);
    if (!fix_decls[i]) {
        char name[40];
        snprintf(name, sizeof name, "__customop_fix_f%u_%c%u", from_bits, unsigned_to ? 'u' : 'i',
                 to_bits);
        tree from = from_bits == 64 ? double_type_node : float_type_node;
        tree to = build_nonstandard_integer_type(to_bits, unsigned_to);
        tree decl = build_fn_decl(name, build_function_type_list(to, from, NULL_TREE));
        // A pure computation of its argument: it may be moved, merged or dropped.
        TREE_READONLY(decl) = 1;
        TREE_NOTHROW(decl) = 1;
        fix_decls[i] = decl;
    }
    return fix_decls[i];
}

const pass_data device_conversions_data = {
    GIMPLE_PASS,
    "device_conversions",
    OPTGROUP_NONE,
    TV_NONE,
    PROP_ssa | PROP_cfg,
    0,
    0,
    0,
    TODO_update_ssa,
};

class device_conversions_pass : public gimple_opt_pass {
    bool optimizing;

public:
    device_conversions_pass(gcc::context *ctx, bool when_optimizing)
        : gimple_opt_pass(device_conversions_data, ctx), optimizing(when_optimizing)
    {
    }

    // One instance runs in optimising builds, the other in -O0 builds.
    bool gate(function *) final override { return (optimize > 0) == optimizing; }

    unsigned int execute(function *fun) final override
    {
        basic_block bb;
        FOR_EACH_BB_FN(bb, fun)
        {
            for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi); gsi_next(&gsi)) {
                gimple *stmt = gsi_stmt(gsi);
                if (!is_gimple_assign(stmt) || gimple_assign_rhs_code(stmt) != FIX_TRUNC_EXPR)
                    continue;
                tree lhs = gimple_assign_lhs(stmt);
                tree arg = gimple_assign_rhs1(stmt);
                tree to = TREE_TYPE(lhs);
                tree from = TREE_TYPE(arg);
                // Scalars only (a vector conversion keeps the host's lanes: none is made in
                // the functions this pass sees first, before the vectoriser).
                if (!INTEGRAL_TYPE_P(to) || !SCALAR_FLOAT_TYPE_P(from))
                    continue;
                unsigned from_bits = TYPE_PRECISION(from);
                unsigned to_bits = TYPE_PRECISION(to);
                if ((from_bits != 32 && from_bits != 64) || to_bits > 64)
                    continue;
                unsigned wide_bits = to_bits > 32 ? 64 : 32;
                tree decl = fix_decl(from_bits, TYPE_UNSIGNED(to), wide_bits);
                tree wide = TREE_TYPE(TREE_TYPE(decl));
                // (`long double` is a double in the device's data model.)
                tree param = TREE_VALUE(TYPE_ARG_TYPES(TREE_TYPE(decl)));
                tree operand = arg;
                if (!useless_type_conversion_p(param, from)) {
                    operand = make_ssa_name(param);
                    gsi_insert_before(&gsi, gimple_build_assign(operand, NOP_EXPR, arg), GSI_SAME_STMT);
                }
                gcall *call = gimple_build_call(decl, 1, operand);
                gimple_set_location(call, gimple_location(stmt));
                if (useless_type_conversion_p(to, wide)) {
                    gimple_call_set_lhs(call, lhs);
                    gsi_replace(&gsi, call, true);
                } else {
                    tree tmp = make_ssa_name(wide);
                    gimple_call_set_lhs(call, tmp);
                    gsi_insert_before(&gsi, call, GSI_SAME_STMT);
                    gimple_assign_set_rhs_with_ops(&gsi, NOP_EXPR, tmp);
                    update_stmt(gsi_stmt(gsi));
                }
            }
        }
        return 0;
    }
};


// ---- the device's stack (D118) ----

// The device build's functions (assembler names without clone suffixes): frame bytes,
// and which call which directly.
std::map<std::string, long> device_frames;
// How far below its caller's stack pointer each one's own code reaches (a Pool core's
// stack overflows on the first access below it, not on the frame's allocation).
std::map<std::string, long> device_touch;
std::set<std::pair<std::string, std::string>> device_calls;
// The device runtime's functions: how deep a call of each reaches (`D NAME BYTES`), and
// for each path the runtime charges when taken that a call of it can take, the path's slot
// of `__customop_stack_charged` and how deep it goes (`R NAME SLOT BYTES`, D122, D132).
std::map<std::string, long> runtime_reach;
std::map<std::string, std::vector<std::pair<long, long>>> runtime_charged;
// The slots of the runtime's `int __customop_stack_charged[]`
// (customop_abi::stack::CHARGED_SLOTS; op-build's tests keep the two equal).
const long CHARGED_SLOTS = 5;

// `name` without GCC's clone suffix (".isra.0" on i386, "$isra$0" on Xtensa), and with one
// name for a constructor's or destructor's variants: the device build calls the complete
// object's (C1, D1), and an inlined one names the unified variant (C4, D4) or the base
// object's (C2, D2).
std::string base_name(const char *name)
{
    std::string n(name);
    size_t cut = n.find_first_of(".$");
    if (cut != std::string::npos)
        n = n.substr(0, cut);
    for (size_t at = 0; (at = n.find_first_of("CD", at)) != std::string::npos; at++) {
        if (at + 2 < n.size() && (n[at + 1] == '2' || n[at + 1] == '4') && n[at + 2] == 'E')
            n[at + 1] = '1';
    }
    return n;
}

std::string function_name(tree decl)
{
    return base_name(IDENTIFIER_POINTER(DECL_ASSEMBLER_NAME(decl)));
}

// The device frame of `name`, or -1 when the device build has no such function.
long frame_of(const std::string &name)
{
    auto it = device_frames.find(name);
    return it == device_frames.end() ? -1 : it->second;
}

// How far below its caller's stack pointer `name`'s own code reaches.
long touch_of(const std::string &name)
{
    auto it = device_touch.find(name);
    return it == device_touch.end() ? 0 : it->second;
}

// Reads the table op-build writes: `F NAME BYTES TOUCH`, `C CALLER CALLEE`, `W WIDTH LINE
// COLUMN FILE`, and the runtime's `D NAME BYTES` and `R NAME SLOT BYTES` lines.
bool read_frames(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char kind = line[0];
        char *rest = line + 1;
        rest[strcspn(rest, "\n")] = 0;
        if (kind == 'W') {
            long width, row, column;
            int at = 0;
            if (sscanf(rest, " %ld %ld %ld %n", &width, &row, &column, &at) == 3 && at > 0 &&
                rest[at])
                device_widest[{std::string(rest + at), row, column}] = width;
            continue;
        }
        char *a = strtok(rest, " ");
        char *b = strtok(nullptr, " ");
        char *c = strtok(nullptr, " ");
        if (!a || !b)
            continue;
        if (kind == 'F') {
            long n = strtol(b, nullptr, 10);
            long t = c ? strtol(c, nullptr, 10) : n;
            long &have = device_frames[base_name(a)];
            have = have > n ? have : n;
            long &touched = device_touch[base_name(a)];
            touched = touched > t ? touched : t;
        } else if (kind == 'C') {
            device_calls.insert({base_name(a), base_name(b)});
        } else if (kind == 'D') {
            runtime_reach[a] = strtol(b, nullptr, 10);
        } else if (kind == 'R' && c) {
            long slot = strtol(b, nullptr, 10);
            if (slot >= 0 && slot < CHARGED_SLOTS)
                runtime_charged[a].push_back({slot, strtol(c, nullptr, 10)});
        }
    }
    fclose(f);
    return true;
}

// How deep the device function `fn`'s calls into the runtime reach (its runtime callees,
// as the device build calls them: host builds may expand some inline, as memset).
long runtime_calls_reach(const std::string &fn)
{
    long most = 0;
    for (auto it = device_calls.lower_bound({fn, std::string()});
         it != device_calls.end() && it->first == fn; ++it) {
        auto r = runtime_reach.find(it->second);
        if (r != runtime_reach.end() && frame_of(it->second) < 0 && r->second > most)
            most = r->second;
    }
    return most;
}

// How far below `above` (the depth at its entry) the device function `g`'s own code
// reaches: its touch, or its frame and its runtime calls' reach (a runtime callee that
// touches nothing adds nothing; a function the device build lacks reaches nowhere).
long own_reach(const std::string &g, long above)
{
    long calls = runtime_calls_reach(g);
    return std::max(above + touch_of(g), calls > 0 ? above + frame_of(g) + calls : 0);
}

// The device's stack depth at `stmt` of the function `fn` above the function's entry:
// its own device frame, and the frames of the functions inlined around `stmt` that the
// device build calls (one it inlined too lives in its caller's frame). `innermost` is the
// device function the statement runs in; `reach`, the deepest its device functions' calls
// into the runtime go.
long depth_at(gimple *stmt, const std::string &fn, std::string *innermost, long *reach)
{
    auto_vec<tree> origins;
    for (tree b = gimple_block(stmt); b && TREE_CODE(b) == BLOCK; b = BLOCK_SUPERCONTEXT(b)) {
        if (!inlined_function_outer_scope_p(b))
            continue;
        tree o = block_ultimate_origin(b);
        if (o && TREE_CODE(o) == FUNCTION_DECL)
            origins.safe_push(o);
    }
    long depth = frame_of(fn);
    if (depth < 0)
        depth = 0;
    std::string in = fn;
    long most = own_reach(fn, 0);
    for (int i = (int)origins.length() - 1; i >= 0; i--) {
        std::string g = function_name(origins[i]);
        long n = frame_of(g);
        if (n < 0)
            continue;
        if (frame_of(in) >= 0 && !device_calls.count({in, g}))
            continue;
        long r = own_reach(g, depth);
        depth += n;
        in = g;
        most = r > most ? r : most;
    }
    *innermost = in;
    *reach = most;
    return depth;
}

tree stack_depth_var, stack_limit_var, stack_charged_var, stack_overflow_fn, stack_check_fn;

const struct ggc_root_tab stack_decls_root[] = {
    {&stack_charged_var, 1, sizeof(tree), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node},
    {&stack_check_fn, 1, sizeof(tree), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node},
    {&stack_depth_var, 1, sizeof(tree), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node},
    {&stack_limit_var, 1, sizeof(tree), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node},
    {&stack_overflow_fn, 1, sizeof(tree), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node},
    LAST_GGC_ROOT_TAB,
};

// The runtime's variable `name` of `type` (defined in the op library: hidden, reached
// without the GOT).
tree runtime_var(const char *name, tree type)
{
    tree v = build_decl(BUILTINS_LOCATION, VAR_DECL, get_identifier(name), type);
    TREE_PUBLIC(v) = 1;
    DECL_EXTERNAL(v) = 1;
    TREE_STATIC(v) = 0;
    TREE_THIS_VOLATILE(v) = 0;
    DECL_VISIBILITY(v) = VISIBILITY_HIDDEN;
    DECL_VISIBILITY_SPECIFIED(v) = 1;
    DECL_ARTIFICIAL(v) = 1;
    return v;
}

// The runtime's word `name`.
tree runtime_int(const char *name)
{
    return runtime_var(name, integer_type_node);
}

// Slot `slot` of the runtime's `__customop_stack_charged`, as a place to store to (a new
// tree each time: GIMPLE shares none).
tree charged_slot(long slot)
{
    return build4(ARRAY_REF, integer_type_node, stack_charged_var,
                  build_int_cst(integer_type_node, slot), NULL_TREE, NULL_TREE);
}

void stack_decls()
{
    if (stack_depth_var)
        return;
    stack_depth_var = runtime_int("__customop_stack_depth");
    stack_limit_var = runtime_int("__customop_stack_limit");
    stack_charged_var = runtime_var("__customop_stack_charged",
                                    build_array_type_nelts(integer_type_node, CHARGED_SLOTS));
    tree fn = build_fn_decl("__customop_device_stack_overflow",
                            build_function_type_list(void_type_node, NULL_TREE));
    TREE_THIS_VOLATILE(fn) = 1; // noreturn
    TREE_NOTHROW(fn) = 1;
    DECL_VISIBILITY(fn) = VISIBILITY_HIDDEN;
    DECL_VISIBILITY_SPECIFIED(fn) = 1;
    stack_overflow_fn = fn;
    tree check = build_fn_decl("__customop_device_stack_check",
                               build_function_type_list(void_type_node, integer_type_node,
                                                        NULL_TREE));
    TREE_NOTHROW(check) = 1;
    DECL_VISIBILITY(check) = VISIBILITY_HIDDEN;
    DECL_VISIBILITY_SPECIFIED(check) = 1;
    stack_check_fn = check;
}

// `value + dynamic`, inserted before `at`: a depth with the bytes the function's
// variable-length arrays hold now added.
tree plus_dynamic(gimple_stmt_iterator *at, tree value, tree dynamic)
{
    tree now = make_ssa_name(integer_type_node);
    gsi_insert_before(at, gimple_build_assign(now, dynamic), GSI_SAME_STMT);
    tree sum = make_ssa_name(integer_type_node);
    gsi_insert_before(at, gimple_build_assign(sum, PLUS_EXPR, value, now), GSI_SAME_STMT);
    return sum;
}

// The largest alloca a depth counts in full: anything larger overflows any stack, and the
// sum stays inside an int.
const unsigned long DYNAMIC_CAP = 1ul << 30;

// `dynamic += bytes alloca `a` takes on the device`, inserted before `at`. GCC for Xtensa
// moves the stack pointer down by the size plus what an alignment above the stack's 16
// bytes needs, rounded up to 16 bytes (its `movsp`; D126).
void count_alloca(gimple_stmt_iterator *at, gimple *a, tree dynamic)
{
    tree size = gimple_call_arg(a, 0);
    unsigned long extra = 15;
    tree fn = gimple_call_fndecl(a);
    if (gimple_call_num_args(a) > 1 && fn &&
        DECL_FUNCTION_CODE(fn) != BUILT_IN_ALLOCA && tree_fits_uhwi_p(gimple_call_arg(a, 1))) {
        unsigned long align = tree_to_uhwi(gimple_call_arg(a, 1)) / BITS_PER_UNIT;
        if (align > 16)
            extra += align - 16;
    }
    tree capped = make_ssa_name(TREE_TYPE(size));
    gsi_insert_before(at,
                      gimple_build_assign(capped, MIN_EXPR, size,
                                          build_int_cst(TREE_TYPE(size), DYNAMIC_CAP)),
                      GSI_SAME_STMT);
    tree bytes = make_ssa_name(integer_type_node);
    gsi_insert_before(at, gimple_build_assign(bytes, NOP_EXPR, capped), GSI_SAME_STMT);
    tree padded = make_ssa_name(integer_type_node);
    gsi_insert_before(at,
                      gimple_build_assign(padded, PLUS_EXPR, bytes,
                                          build_int_cst(integer_type_node, extra)),
                      GSI_SAME_STMT);
    tree rounded = make_ssa_name(integer_type_node);
    gsi_insert_before(at,
                      gimple_build_assign(rounded, BIT_AND_EXPR, padded,
                                          build_int_cst(integer_type_node, -16)),
                      GSI_SAME_STMT);
    tree total = plus_dynamic(at, rounded, dynamic);
    gsi_insert_before(at, gimple_build_assign(dynamic, total), GSI_SAME_STMT);
}

// Each `p = __builtin_stack_save ()` keeps the bytes held then (in a variable of its own);
// each `__builtin_stack_restore (p)` of such a `p` gives them back. A restore of a
// pointer that comes from elsewhere (merged from several saves) leaves the count as it
// is: what the function's later calls are charged may then be too deep, never too shallow.
void pair_saves_and_restores(vec<gimple *> &saves, vec<gimple *> &restores, tree dynamic)
{
    std::map<tree, tree> kept;
    for (gimple *s : saves) {
        tree held = create_tmp_var(integer_type_node, "device_dynamic_saved");
        TREE_ADDRESSABLE(held) = 1;
        gimple_stmt_iterator at = gsi_for_stmt(s);
        gsi_next(&at);
        tree now = make_ssa_name(integer_type_node);
        gsi_insert_before(&at, gimple_build_assign(now, dynamic), GSI_SAME_STMT);
        gsi_insert_before(&at, gimple_build_assign(held, now), GSI_SAME_STMT);
        kept[gimple_call_lhs(s)] = held;
    }
    for (gimple *r : restores) {
        auto k = kept.find(gimple_call_arg(r, 0));
        if (k == kept.end())
            continue;
        gimple_stmt_iterator at = gsi_for_stmt(r);
        gsi_next(&at);
        tree then = make_ssa_name(integer_type_node);
        gsi_insert_before(&at, gimple_build_assign(then, k->second), GSI_SAME_STMT);
        gsi_insert_before(&at, gimple_build_assign(dynamic, then), GSI_SAME_STMT);
    }
}

const pass_data device_stack_data = {
    GIMPLE_PASS,
    "device_stack",
    OPTGROUP_NONE,
    TV_NONE,
    PROP_ssa | PROP_cfg,
    0,
    0,
    0,
    TODO_update_ssa_only_virtuals | TODO_cleanup_cfg,
};

class device_stack_pass : public gimple_opt_pass {
public:
    explicit device_stack_pass(gcc::context *ctx) : gimple_opt_pass(device_stack_data, ctx) {}

    unsigned int execute(function *fun) final override
    {
        std::string fn = function_name(fun->decl);
        // The deepest the function's own code reaches (checked on entry); a block whose
        // code goes deeper (functions inlined here, which run only when the block does: a
        // recursion's last call) checks on its way in. Each call's depth for its callee
        // counts whole frames: the callee's own code decides what it touches.
        long deepest = own_reach(fn, 0);
        auto_vec<std::pair<gimple *, long>> calls;
        auto_vec<gimple *> returns;
        // Variable-length arrays and alloca: their bytes lie below the frame on the device
        // too (its `movsp`), so the depth adds what they took, measured here as the
        // stack pointer's distance from where the function began.
        auto_vec<gimple *> allocas;
        // Where the function saves the stack pointer and restores it (a variable-length
        // array's scope, left each time round a loop).
        auto_vec<gimple *> saves, restores;
        auto_vec<std::pair<basic_block, long>> deeper;
        bool moves = false;
        basic_block bb;
        FOR_EACH_BB_FN(bb, fun)
        {
            long block_deepest = 0;
            for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi); gsi_next(&gsi)) {
                gimple *stmt = gsi_stmt(gsi);
                if (gimple_code(stmt) == GIMPLE_RETURN) {
                    returns.safe_push(stmt);
                    continue;
                }
                if (is_gimple_debug(stmt))
                    continue;
                std::string in;
                long reach;
                long depth = depth_at(stmt, fn, &in, &reach);
                block_deepest = std::max(block_deepest, reach);
                if (!is_gimple_call(stmt) || gimple_call_internal_p(stmt))
                    continue;
                tree builtin = gimple_call_fndecl(stmt);
                if (builtin && fndecl_built_in_p(builtin, BUILT_IN_NORMAL) &&
                    ALLOCA_FUNCTION_CODE_P(DECL_FUNCTION_CODE(builtin))) {
                    if (gimple_call_lhs(stmt))
                        allocas.safe_push(stmt);
                    continue;
                }
                if (builtin && fndecl_built_in_p(builtin, BUILT_IN_STACK_SAVE)) {
                    if (gimple_call_lhs(stmt))
                        saves.safe_push(stmt);
                    continue;
                }
                if (builtin && fndecl_built_in_p(builtin, BUILT_IN_STACK_RESTORE)) {
                    restores.safe_push(stmt);
                    continue;
                }
                tree callee = gimple_call_fndecl(stmt);
                if (callee && fndecl_built_in_p(callee) && !DECL_ASSEMBLER_NAME_SET_P(callee))
                    continue;
                if (callee) {
                    // Inlined into `in` by the device build: its frame is in `in`'s, so
                    // the callee's own count is taken back here.
                    std::string g = function_name(callee);
                    long n = frame_of(g);
                    if (n > 0 && frame_of(in) >= 0 && !device_calls.count({in, g}))
                        depth -= n;
                }
                calls.safe_push({stmt, depth});
                moves |= depth != 0;
            }
            if (block_deepest > deepest)
                deeper.safe_push({bb, block_deepest});
        }
        // Only a block that goes deeper than every block above it (its dominators) checks:
        // what always runs is checked once, where it first can be.
        if (!deeper.is_empty()) {
            std::map<int, long> need;
            for (auto &d : deeper)
                need[d.first->index] = d.second;
            deeper.truncate(0);
            calculate_dominance_info(CDI_DOMINATORS);
            auto_vec<std::pair<basic_block, long>> work;
            work.safe_push({ENTRY_BLOCK_PTR_FOR_FN(fun), deepest});
            while (!work.is_empty()) {
                std::pair<basic_block, long> at = work.pop();
                long here = at.second;
                auto it = need.find(at.first->index);
                if (it != need.end() && it->second > here) {
                    deeper.safe_push({at.first, it->second});
                    here = it->second;
                }
                for (basic_block son = first_dom_son(CDI_DOMINATORS, at.first); son;
                     son = next_dom_son(CDI_DOMINATORS, son))
                    work.safe_push({son, here});
            }
            free_dominance_info(CDI_DOMINATORS);
        }
        if (deepest == 0 && !moves && deeper.is_empty() && allocas.is_empty())
            return 0;
        stack_decls();

        // Entry: saved = depth; if (saved + deepest > limit) overflow ();
        edge e = single_succ_edge(ENTRY_BLOCK_PTR_FOR_FN(fun));
        basic_block entry = split_edge(e);
        gimple_stmt_iterator gsi = gsi_start_bb(entry);
        tree saved = make_ssa_name(integer_type_node);
        gsi_insert_after(&gsi, gimple_build_assign(saved, stack_depth_var), GSI_NEW_STMT);
        // The bytes the function's variable-length arrays and alloca hold on the device
        // now (D126): counted by the device compiler's rule, not measured from the host's
        // stack pointer (x86 moves it for its own reasons too).
        tree dynamic = NULL_TREE;
        if (!allocas.is_empty()) {
            dynamic = create_tmp_var(integer_type_node, "device_dynamic");
            TREE_ADDRESSABLE(dynamic) = 1;
            gsi_insert_after(&gsi, gimple_build_assign(dynamic, integer_zero_node), GSI_NEW_STMT);
        }
        tree need = make_ssa_name(integer_type_node);
        gsi_insert_after(&gsi,
                         gimple_build_assign(need, PLUS_EXPR, saved,
                                             build_int_cst(integer_type_node, deepest)),
                         GSI_NEW_STMT);
        tree limit = make_ssa_name(integer_type_node);
        gsi_insert_after(&gsi, gimple_build_assign(limit, stack_limit_var), GSI_NEW_STMT);
        gcond *over = gimple_build_cond(GT_EXPR, need, limit, NULL_TREE, NULL_TREE);
        gsi_insert_after(&gsi, over, GSI_NEW_STMT);
        edge fine = split_block(entry, over);
        fine->flags &= ~EDGE_FALLTHRU;
        fine->flags |= EDGE_FALSE_VALUE;
        fine->probability = profile_probability::very_likely();
        basic_block fail = create_empty_bb(entry);
        edge to_fail = make_edge(entry, fail, EDGE_TRUE_VALUE);
        to_fail->probability = profile_probability::very_unlikely();
        fail->count = entry->count.apply_probability(to_fail->probability);
        if (current_loops)
            add_bb_to_loop(fail, entry->loop_father);
        gimple_stmt_iterator fg = gsi_start_bb(fail);
        // No line of its own: the prologue's line covers it (a debugger's `break` on the
        // function then stops at its first statement, not on this path, never taken).
        gcall *report = gimple_build_call(stack_overflow_fn, 0);
        gimple_set_location(report, UNKNOWN_LOCATION);
        gsi_insert_after(&fg, report, GSI_NEW_STMT);

        // Before each call: the depth its callee starts from. Calls keep their frames
        // (the device's windowed calls never become jumps).
        for (auto &c : calls) {
            gimple *stmt = c.first;
            gimple_stmt_iterator at = gsi_for_stmt(stmt);
            tree value = saved;
            if (c.second != 0) {
                value = make_ssa_name(integer_type_node);
                gsi_insert_before(&at,
                                  gimple_build_assign(value, PLUS_EXPR, saved,
                                                      build_int_cst(integer_type_node, c.second)),
                                  GSI_SAME_STMT);
            }
            if (dynamic)
                // Below what the function's variable-length arrays took.
                value = plus_dynamic(&at, value, dynamic);
            gsi_insert_before(&at, gimple_build_assign(stack_depth_var, value), GSI_SAME_STMT);
            // A runtime call that can take paths the runtime charges when taken (printf's
            // float conversion, libm's reductions): how deep each would reach, in its slot,
            // for the runtime to check if it is taken (D122, D132).
            tree callee = gimple_call_fndecl(stmt);
            auto charged = callee ? runtime_charged.find(function_name(callee))
                                  : runtime_charged.end();
            if (charged != runtime_charged.end()) {
                for (const auto &path : charged->second) {
                    tree deep = make_ssa_name(integer_type_node);
                    gsi_insert_before(&at,
                                      gimple_build_assign(deep, PLUS_EXPR, value,
                                                          build_int_cst(integer_type_node,
                                                                        path.second)),
                                      GSI_SAME_STMT);
                    gsi_insert_before(&at, gimple_build_assign(charged_slot(path.first), deep),
                                      GSI_SAME_STMT);
                }
                // And none pending once it returns: a charged function reached later by
                // a call that sets none (a checking-mode note from a sanitizer's handler,
                // D128) must not meet this call's depth.
                if (!stmt_ends_bb_p(stmt)) {
                    for (const auto &path : charged->second) {
                        gimple_stmt_iterator after = gsi_for_stmt(stmt);
                        gsi_insert_after(&after,
                                         gimple_build_assign(charged_slot(path.first),
                                                             build_int_cst(integer_type_node,
                                                                           INT_MIN)),
                                         GSI_NEW_STMT);
                    }
                }
            }
            if (is_a<gcall *>(stmt))
                gimple_call_set_tail(as_a<gcall *>(stmt), false);
        }
        // Before each return: the caller's depth again.
        for (gimple *ret : returns) {
            gimple_stmt_iterator at = gsi_for_stmt(ret);
            gsi_insert_before(&at, gimple_build_assign(stack_depth_var, saved), GSI_SAME_STMT);
        }
        // After each variable-length array or alloca: its device bytes counted, and the
        // function's deepest below them checked.
        for (gimple *a : allocas) {
            gimple_stmt_iterator at = gsi_for_stmt(a);
            gsi_next(&at);
            count_alloca(&at, a, dynamic);
            tree base = make_ssa_name(integer_type_node);
            gsi_insert_before(&at,
                              gimple_build_assign(base, PLUS_EXPR, saved,
                                                  build_int_cst(integer_type_node, deepest)),
                              GSI_SAME_STMT);
            tree need = plus_dynamic(&at, base, dynamic);
            gcall *check = gimple_build_call(stack_check_fn, 1, need);
            gimple_set_location(check, gimple_location(a));
            gsi_insert_before(&at, check, GSI_SAME_STMT);
        }
        // A saved stack pointer keeps the bytes held then; its restore gives them back.
        if (dynamic)
            pair_saves_and_restores(saves, restores, dynamic);
        // Blocks that go deeper: __customop_device_stack_check (saved + their deepest).
        for (auto &d : deeper) {
            gimple_stmt_iterator at = gsi_after_labels(d.first);
            tree need = make_ssa_name(integer_type_node);
            gsi_insert_before(&at,
                              gimple_build_assign(need, PLUS_EXPR, saved,
                                                  build_int_cst(integer_type_node, d.second)),
                              GSI_SAME_STMT);
            if (dynamic)
                need = plus_dynamic(&at, need, dynamic);
            gcall *check = gimple_build_call(stack_check_fn, 1, need);
            gimple_set_location(check, gimple_location(gsi_stmt(at)));
            gsi_insert_before(&at, check, GSI_SAME_STMT);
        }
        mark_virtual_operands_for_renaming(fun);
        return 0;
    }
};

} // namespace

int plugin_init(struct plugin_name_args *info, struct plugin_gcc_version *version)
{
    if (!plugin_default_version_check(version, &gcc_version)) {
        error("%s: built for GCC %s, loaded by GCC %s; rebuild it", info->base_name,
              gcc_version.basever, version->basever);
        return 1;
    }
    register_callback(info->base_name, PLUGIN_FINISH_DECL, word_align_aggregates, nullptr);
    // Where the checks are made (every optimisation level), and again once the early
    // optimisers have propagated constant addresses (`p = b + 3; *p` at -O1 and above),
    // before anything unrolls or inlines across functions.
    const char *after[] = {"ubsan", "forwprop"};
    for (const char *name : after) {
        struct register_pass_info pass;
        pass.pass = new device_alignment_pass(g);
        pass.reference_pass_name = name;
        pass.ref_pass_instance_number = 1;
        pass.pos_op = PASS_POS_INSERT_AFTER;
        register_callback(info->base_name, PLUGIN_PASS_MANAGER_SETUP, nullptr, &pass);
    }
    // Conversions: once the early optimisers have folded what they can (as the device
    // build's do), before the vectoriser can turn a loop of them into x86 vector lanes.
    register_callback(info->base_name, PLUGIN_REGISTER_GGC_ROOTS, nullptr,
                      const_cast<ggc_root_tab *>(fix_decls_root));
    // (-O0 builds: once in SSA form, where nothing folds.)
    for (bool optimizing : {true, false}) {
        struct register_pass_info conversions;
        conversions.pass = new device_conversions_pass(g, optimizing);
        conversions.reference_pass_name = optimizing ? "ccp" : "ssa";
        conversions.ref_pass_instance_number = 1;
        conversions.pos_op = PASS_POS_INSERT_AFTER;
        register_callback(info->base_name, PLUGIN_PASS_MANAGER_SETUP, nullptr, &conversions);
    }
    // The device's stack, once every inlining decision is made (the last GIMPLE pass, at
    // every optimisation level), when the device build's frames are given.
    for (int i = 0; i < info->argc; i++) {
        if (strcmp(info->argv[i].key, "frames") != 0)
            continue;
        if (!info->argv[i].value || !read_frames(info->argv[i].value)) {
            error("%s: cannot read the device frames table %qs", info->base_name,
                  info->argv[i].value ? info->argv[i].value : "");
            return 1;
        }
        register_callback(info->base_name, PLUGIN_REGISTER_GGC_ROOTS, nullptr,
                          const_cast<ggc_root_tab *>(stack_decls_root));
        struct register_pass_info stack;
        stack.pass = new device_stack_pass(g);
        stack.reference_pass_name = "optimized";
        stack.ref_pass_instance_number = 1;
        stack.pos_op = PASS_POS_INSERT_AFTER;
        register_callback(info->base_name, PLUGIN_PASS_MANAGER_SETUP, nullptr, &stack);
    }
    return 0;
}
