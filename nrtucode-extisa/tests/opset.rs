//! The opcode set: slots, the 0xF0 specialization bitmap, queries and library index.

mod common;

use std::ffi::CString;
use std::ptr;

use common::*;
use nrtucode_extisa::ffi::opset::*;
use nrtucode_extisa::*;

fn instr(opcode: u8, spec: u8) -> [u8; 64] {
    let mut i = [0xEEu8; 64];
    i[0] = opcode;
    i[0x0c] = spec;
    i
}

#[test]
fn opset_add_and_query() {
    let rig = Rig::new();
    let mut op = ptr::null_mut();
    // SAFETY: live context; the opset is destroyed below; instructions are 64 bytes.
    unsafe {
        assert_eq!(nrtucode_opset_create(rig.ctx, &mut op), 0);
        let name = format!("nrtucode_opset_t@{op:p}");
        assert!(rig.has_log(4, &format!("Initialized {name}")));
        assert_eq!(u64_at(op, 0), rig.ctx as u64);
        assert!(
            (0..256).all(|i| u64_at(op, 8 + 8 * i) == 0),
            "slots start NULL"
        );
        assert_eq!(
            nrtucode_opset_get_library_index(op, 2, &mut 99usize),
            0,
            "empty set: any ct"
        );

        assert_eq!(
            nrtucode_opset_add_instruction(op, instr(0x41, 7).as_ptr().cast()),
            0
        );
        assert!(rig.has_log(4, &format!("{name} added opcode 0x41")));
        assert_eq!(
            nrtucode_opset_private_get_num_specializations(op, 0x41),
            0,
            "spec ignored for non-0xF0"
        );
        rig.dev.clear_host_logs();
        assert_eq!(
            nrtucode_opset_add_instruction(op, instr(0x41, 7).as_ptr().cast()),
            0
        );
        assert!(rig.logs().is_empty(), "idempotent, no log");

        for spec in [0, 1, 2, 7, 7] {
            assert_eq!(
                nrtucode_opset_add_instruction(op, instr(0xF0, spec).as_ptr().cast()),
                0
            );
        }
        assert!(rig.has_log(4, &format!("{name} added opcode 0xf0")));
        assert!(rig.has_log(
            4,
            &format!("{name} added extended opcode 0xf0 with specialization 0x07")
        ));
        assert_eq!(
            rig.log_texts()
                .iter()
                .filter(|l| l.contains("specialization 0x07"))
                .count(),
            1,
            "a repeated specialization is not logged again"
        );
        assert_eq!(nrtucode_opset_private_get_num_opcodes(op), 2);
        assert_eq!(nrtucode_opset_private_get_num_specializations(op, 0xF0), 4);
        assert!(nrtucode_opset_private_has_opcode(op, 0xF0));
        assert!(!nrtucode_opset_private_has_opcode(op, 0x42));
        assert!(nrtucode_opset_private_has_specialization(op, 0xF0, 7));
        assert!(!nrtucode_opset_private_has_specialization(op, 0xF0, 3));
        assert!(!nrtucode_opset_private_has_specialization(op, 0x42, 0));

        let mut lib = 99usize;
        for ct in [6, 13, 21, 29] {
            assert_eq!(nrtucode_opset_get_library_index(op, ct, &mut lib), 0);
            assert_eq!(lib, 0);
        }
        let mut untouched = 99usize;
        assert_eq!(
            nrtucode_opset_get_library_index(op, 2, &mut untouched),
            NRTUCODE_ERR_UNKNOWN_CORE
        );
        assert_eq!(untouched, 99);

        let long = CString::new("compiler-opset-with-a-very-long-name-indeed").unwrap();
        nrtucode_opset_set_friendly_name(op, long.as_ptr());
        assert!(rig.has_log(
            4,
            &format!("{name} renamed compiler-opset-with-a-very-long-name-indeed")
        ));
        let field: Vec<u8> = (0..0x28).map(|i| byte_at(op, 0x808 + i)).collect();
        assert_eq!(&field[..32], &long.as_bytes()[..32]);
        assert_eq!(field[32], 0, "NUL forced at +0x828");

        nrtucode_opset_destroy(op);
        assert!(rig.has_log(4, "Destroyed compiler-opset-with-a-very-long-"));
    }
}

#[test]
fn queries_on_null_are_zero() {
    // SAFETY: NULL is explicitly handled by the queries.
    unsafe {
        assert_eq!(nrtucode_opset_private_get_num_opcodes(ptr::null()), 0);
        assert_eq!(
            nrtucode_opset_private_get_num_specializations(ptr::null(), 0xF0),
            0
        );
        assert!(!nrtucode_opset_private_has_opcode(ptr::null(), 0xF0));
        assert!(!nrtucode_opset_private_has_specialization(
            ptr::null(),
            0xF0,
            0
        ));
    }
}
