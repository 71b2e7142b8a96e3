// A GCC plugin for host builds of op code: alignment as GCC for Xtensa sees it (D105).
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
//    Every other check stays and faults as the device does. What the device compiler
//    learns later (after unrolling, inlining, induction variables) depends on its own
//    optimisation level and target: the device build at -Os and the host's at -O3 part
//    ways there, so the plugin does not guess; a difference left is a fault on host cores
//    only, which the parity check names (never bytes where the device faults).

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
                if (gimple_call_internal_p(stmt, IFN_UBSAN_NULL) && known_misaligned(stmt)) {
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
    return 0;
}
