//! A NEURON_LIBRARY op's shape function, run on core 0 over the arguments' dtypes and
//! shapes, and the check of an op's arguments against its registration.

use super::*;

/// Runs op `name`'s shape function (`qualified` in reports) over checked arguments.
pub(crate) fn run_shape(
    e: &mut PoolEngine,
    name: &str,
    qualified: &str,
    args: &[LaunchArg],
) -> Result<OutputSpec, EmuError> {
    let qualified = qualified.to_string();
    e.tensors.memory.reset_hbm();
    e.tensors.clear_placed();
    let mut blob = empty_blob(args.len());
    let mut sbuf_next = 0;
    for (i, a) in args.iter().enumerate() {
        let label = format!("argument {i}");
        blob.types[i] = ARG_TYPE_TENSOR;
        blob.args[i] = match a {
            // A shape function sees dtypes and shapes only: no data is placed.
            LaunchArg::Tensor(t, _) => {
                tensor::check_rank(&t.shape).map_err(|e| named(&label, e.into()))?;
                let dims: Vec<u32> = t.shape.iter().map(|&d| d as u32).collect();
                ArgTensor::hbm(t.dtype.isa(), 0, &dims)
            }
            LaunchArg::Device(d) => {
                tensor::check_rank(&d.shape).map_err(|e| named(&label, e.into()))?;
                device_descriptor(d)
            }
            LaunchArg::Scalar(dt, bytes) => {
                let mut padded = bytes.clone();
                padded.resize(SCALAR_ROOM, 0);
                e.tensors
                    .place(
                        &label,
                        *dt,
                        &[1],
                        Contents::Bytes(&padded),
                        Location::Hbm,
                        &mut sbuf_next,
                    )
                    .map_err(|e| named(&label, e))?
            }
        };
    }
    e.tensors.write_blob(0, &blob);
    let lib = e.loaded.library().ok_or(EmuError::NoLibrary)?;
    let c_op = CString::new(name).map_err(|_| EmuError::NoLibrary)?;
    let deadline = e.defaults.deadline();
    let guards = e.tensors.guards();
    let shaped = e
        .backend
        .shape(&e.tensors.memory, lib, &c_op, &guards, &deadline)
        .map_err(EmuError::Spawn)?;
    if deadline.interrupted() {
        return Err(EmuError::Interrupted {
            what: format!("the shape function of {name}"),
        });
    }
    if let Outcome::Fault(record) = &shaped.end.outcome {
        // What it printed before the fault, as a kernel's.
        let file = shaped.ran_in.clone().unwrap_or_else(|| lib.file());
        let stdio = e.take_output(shaped.stdio);
        let fault = run::fault_with_output(
            e,
            0,
            record,
            &format!("shape function of {qualified}"),
            &file,
            stdio,
            &shaped.end.stderr,
        );
        return Err(EmuError::Fault(Box::new(fault)));
    }
    e.keep_output(shaped.stdio);
    if let Some(why) = shaped.refused {
        return Err(EmuError::Shape { op: qualified, why });
    }
    let out = e.tensors.read_blob(0).output;
    let dtype = DType::from_isa(out.dtype).ok_or_else(|| EmuError::Shape {
        op: qualified.clone(),
        why: format!(
            "its output has dtype code {}, which no launch can carry",
            out.dtype
        ),
    })?;
    let (dims, rank) = out.try_dims().map_err(|r| EmuError::Shape {
        op: qualified.clone(),
        why: format!("its output's shape breaks {r}"),
    })?;
    Ok(OutputSpec {
        dtype,
        shape: dims[..rank].iter().map(|&d| u64::from(d)).collect(),
        location: Location::Hbm,
    })
}

/// A NEURON_LIBRARY op's arguments: their number, and tensors where it takes tensors.
pub(crate) fn check_op_args(
    op: &str,
    sig: &schema::OpSig,
    args: &[LaunchArg],
) -> Result<(), EmuError> {
    let bad = |why: String| EmuError::Signature {
        kernel: op.into(),
        why,
    };
    let kinds: Vec<String> = sig.args.iter().map(|k| k.to_string()).collect();
    if args.len() != sig.args.len() {
        return Err(bad(format!(
            "takes {} argument(s) ({}), got {}",
            sig.args.len(),
            kinds.join(", "),
            args.len()
        )));
    }
    for (i, (kind, a)) in sig.args.iter().zip(args).enumerate() {
        let tensor = matches!(a, LaunchArg::Tensor(..) | LaunchArg::Device(_));
        if tensor != (*kind == schema::ArgKind::Tensor) {
            return Err(bad(format!(
                "argument {i} is a {kind}, got a {}",
                if tensor { "tensor" } else { "scalar" }
            )));
        }
    }
    Ok(())
}
