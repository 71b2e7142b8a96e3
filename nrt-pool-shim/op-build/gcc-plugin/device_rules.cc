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
#include "stringpool.h"
#include "ggc.h"
#include "gimple-ssa.h"
#include "tree-ssanames.h"

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
    return 0;
}
