//! `prelink`: the UCPL image `ll_create` stages: header, code at 0x20, data at
//! `data_seg_off` (the gap between them, which the device never has written, is zero here).

use std::path::PathBuf;

use nrtucode_extisa::prelink::{self, CAYMAN_GEOMETRY};

use crate::{read, write_atomic, ToolError};

/// `prelink IMAGE [--coretype N] [-o OUT]`.
pub fn run(image: String, coretype: u32, out: Option<PathBuf>) -> Result<(), ToolError> {
    match coretype {
        13 | 21 | 29 => {}
        6 => {
            return Err(ToolError::Invalid(
                "coretype 6 (SUNDA): SUNDA libraries are pushed whole, never prelinked".into(),
            ))
        }
        other => {
            return Err(ToolError::Invalid(format!(
                "coretype {other} is not a Q7 POOL coretype (13, 21 or 29)"
            )))
        }
    }
    let bytes = read(&image)?;
    let staged = stage(&bytes).map_err(ToolError::Invalid)?;
    crate::warn_hazards(&image, &bytes);
    let out = out.unwrap_or_else(|| PathBuf::from(format!("{image}.ucpl")));
    write_atomic(&out, &staged)?;
    println!(
        "{}: {} bytes (UCPL header + code + data) for coretype {coretype}",
        out.display(),
        staged.len()
    );
    Ok(())
}

/// The staged byte image of a library, or the prelinker's complaint.
pub fn stage(image: &[u8]) -> Result<Vec<u8>, String> {
    let g = CAYMAN_GEOMETRY;
    let (mut code, mut data) = (vec![0; g.iram_size], vec![0; g.dram_size]);
    let mut logs = Vec::new();
    let ucpl = prelink::prelink(image, &g, &mut code, &mut data, &mut |a| {
        logs.push(a.to_string())
    })
    .map_err(|st| format!("prelink failed with status {st}: {}", logs.join("; ")))?;
    let size = (ucpl.data_seg_off + ucpl.data_seg_len) as usize;
    if size > nrtucode_extisa::ll::MAX_STAGED_SIZE as usize {
        return Err(format!(
            "prelinked library is {size} bytes; the device buffer takes 65536"
        ));
    }
    let mut out = vec![0u8; size];
    out[..0x20].copy_from_slice(&ucpl.to_bytes());
    let code_off = ucpl.code_seg_off as usize;
    out[code_off..code_off + ucpl.code_seg_len as usize]
        .copy_from_slice(&code[..ucpl.code_seg_len as usize]);
    let data_off = ucpl.data_seg_off as usize;
    out[data_off..].copy_from_slice(&data[..ucpl.data_seg_len as usize]);
    Ok(out)
}
