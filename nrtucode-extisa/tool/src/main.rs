//! `nrtucode-tool`: the microcode images, outside a runtime.
//!
//!   nrtucode-tool inspect FILE                      segments, dynamic entries, relocations,
//!                                                   kernel_info_table of an ELF or UCPL image
//!   nrtucode-tool prelink IMAGE [--coretype N] [-o OUT]
//!                                                   the UCPL image ll_create would stage
//!   nrtucode-tool extract VENDOR_FILE -o DIR [--allow-unverified]
//!                                                   the images of a vendor provider (ext-ISA
//!                                                   libraries, JSON, base memory images,
//!                                                   hwdecode tables) as an image directory

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use nrtucode_tool::{extract, inspect, prelink, ToolError};

/// The GPSIMD microcode images outside a runtime: inspect, prelink, extract.
#[derive(Parser)]
#[command(name = "nrtucode-tool", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// What an ELF32 Xtensa library or a UCPL image holds: segments, dynamic entries,
    /// relocations, kernel_info_table, and what the prelinker would stage wrongly
    Inspect {
        file: String,
        /// Print a JSON document instead
        #[arg(long)]
        json: bool,
    },
    /// The UCPL image ll_create would stage for a Q7 POOL coretype
    Prelink {
        image: String,
        /// The core type (13, 21 or 29)
        #[arg(long, default_value_t = 13, value_name = "N", value_parser = parse_coretype, allow_hyphen_values = true)]
        coretype: u32,
        /// Where the image goes (default: IMAGE.ucpl)
        #[arg(short = 'o', value_name = "OUT")]
        out: Option<PathBuf>,
    },
    /// The images of a vendor provider (ext-ISA libraries, JSON, base memory images,
    /// hwdecode tables) as an image directory
    Extract {
        vendor_file: PathBuf,
        /// The image directory to write
        #[arg(short = 'o', value_name = "DIR")]
        out: PathBuf,
        /// Extract from a provider whose build is not one of the verified ones
        #[arg(long)]
        allow_unverified: bool,
    },
}

fn parse_coretype(v: &str) -> Result<u32, String> {
    v.parse()
        .map_err(|_| format!("bad coretype {v:?} (13, 21 or 29)"))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            // Usage errors carry the tool's prefix, as its other errors do.
            let text = e.render().to_string();
            eprint!(
                "nrtucode-tool: {}",
                text.strip_prefix("error: ").unwrap_or(&text)
            );
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Cmd::Inspect { file, json } => inspect::run(&file, json),
        Cmd::Prelink {
            image,
            coretype,
            out,
        } => prelink::run(image, coretype, out),
        Cmd::Extract {
            vendor_file,
            out,
            allow_unverified,
        } => extract::run(vendor_file, out, allow_unverified),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(ToolError::Usage(u)) => {
            eprintln!("nrtucode-tool: {u}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("nrtucode-tool: {e}");
            ExitCode::FAILURE
        }
    }
}
