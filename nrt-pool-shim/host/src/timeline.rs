//! The host's side of a host core's measured timeline (D124): what the core wrote to its
//! timeline area, with each sampled frame named from the op library's file (read, never
//! loaded, as a fault's stack is named).

use std::collections::HashMap;

use customop_abi::access::COPY_OUT;
use customop_abi::control::{CopyStamp, Sample, TimelineHeader, FRAME_OUTSIDE};
use nrt_pool_engine::profile::{DefinitionLines, MeasuredCopy, MeasuredTimeline, OUTSIDE_FRAME};
use nrt_pool_engine::symbolize::{FunctionLines, SourceFrame, StackAddr};

/// Names for sampled frames, each address looked up once, and where the functions they
/// name are defined (the library's debug information parsed once for both).
pub struct FrameNames<'a> {
    known: Option<FunctionLines<'a>>,
    cache: HashMap<(u32, bool), Option<Vec<SourceFrame>>>,
}

impl<'a> FrameNames<'a> {
    /// `library`: the op library's file (None, or a file this build cannot read: frames
    /// are named by their offsets).
    pub fn new(library: Option<&'a [u8]>) -> FrameNames<'a> {
        FrameNames {
            known: library.and_then(FunctionLines::new),
            cache: HashMap::new(),
        }
    }

    /// Where each of `functions` (names [`FrameNames::stack`] gave) is defined, for those
    /// the library's debug information places.
    pub fn lines<'n>(&self, functions: impl IntoIterator<Item = &'n str>) -> DefinitionLines {
        let Some(known) = &self.known else {
            return DefinitionLines::new();
        };
        functions
            .into_iter()
            .filter_map(|f| Some((f.to_string(), known.line(f)?)))
            .collect()
    }

    /// The frames at library offset `offset` (the interrupted instruction when `exact`,
    /// else a return address), innermost first; None where the library's segments do not
    /// hold it (another object loaded above the library).
    fn at(&mut self, offset: u32, exact: bool) -> Option<&[SourceFrame]> {
        let known = &self.known;
        self.cache
            .entry((offset, exact))
            .or_insert_with(|| {
                let Some(s) = known.as_ref().map(FunctionLines::symbolizer) else {
                    return Some(Vec::new());
                };
                s.maps(u64::from(offset)).then(|| {
                    s.frames(StackAddr {
                        addr: u64::from(offset),
                        exact,
                    })
                })
            })
            .as_deref()
    }

    /// A sample's functions, outermost first, from the outermost frame of the op's own
    /// source on (the launcher, the runtime's stack switch and the generated wrapper
    /// above the kernel are left out; a stack with no frame of the op's own keeps all).
    pub fn stack(&mut self, s: &Sample) -> Vec<String> {
        let mut frames: Vec<(String, bool)> = Vec::new();
        for (i, &f) in s.frames().iter().enumerate() {
            if f == FRAME_OUTSIDE {
                frames.push((OUTSIDE_FRAME.to_string(), false));
                continue;
            }
            let Some(named) = self.at(f, i == 0) else {
                frames.push((OUTSIDE_FRAME.to_string(), false));
                continue;
            };
            if named.is_empty() {
                frames.push((format!("library+{f:#x}"), false));
            }
            for sf in named {
                let name = sf
                    .function
                    .clone()
                    .unwrap_or_else(|| format!("library+{f:#x}"));
                frames.push((name, sf.is_op_code()));
            }
        }
        // Outside frames beyond the library's outermost one are the core runner's (one is
        // kept where there is nothing else: the runner's own work, a DMA copy's).
        while frames.len() > 1 && frames.last().is_some_and(|(n, _)| n == OUTSIDE_FRAME) {
            frames.pop();
        }
        if let Some(k) = frames.iter().rposition(|(_, own)| *own) {
            frames.truncate(k + 1);
        }
        frames.into_iter().rev().map(|(n, _)| n).collect()
    }
}

/// A core's timeline as it wrote it, its frames named.
pub fn measured(
    head: &TimelineHeader,
    copies: &[CopyStamp],
    samples: &[Sample],
    names: &mut FrameNames<'_>,
) -> MeasuredTimeline {
    let copies: Vec<MeasuredCopy> = copies
        .iter()
        .map(|c| MeasuredCopy {
            start_ns: c.start_ns,
            end_ns: c.end_ns.max(c.start_ns),
            out: c.flags & COPY_OUT != 0,
            bytes: c.bytes,
            copies: c.copies,
        })
        .collect();
    let logged = copies.iter().fold(0u32, |n, c| n.saturating_add(c.copies));
    MeasuredTimeline {
        interval_ns: u64::from(head.interval_ns),
        samples: samples.iter().map(|s| (s.at_ns, names.stack(s))).collect(),
        copies,
        unlogged: head.copies.saturating_sub(logged),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_without_a_library_are_named_by_offset_and_the_runner_is_left_out() {
        let mut names = FrameNames::new(None);
        let mut s = Sample::EMPTY;
        for (i, f) in [FRAME_OUTSIDE, 0x1234, 0x40, FRAME_OUTSIDE, FRAME_OUTSIDE]
            .into_iter()
            .enumerate()
        {
            s.frames[i] = f;
        }
        s.depth = 5;
        assert_eq!(
            names.stack(&s),
            ["library+0x40", "library+0x1234", OUTSIDE_FRAME],
            "outermost first; the runner's frames beyond the library dropped, an inner \
             one (a system library's memcpy) kept"
        );
    }

    #[test]
    fn copies_past_the_log_are_counted_apart() {
        let head = TimelineHeader {
            interval_ns: 50_000,
            copies: 7,
            ..TimelineHeader::default()
        };
        let stamps = [CopyStamp {
            start_ns: 10,
            end_ns: 5,
            bytes: 512,
            flags: COPY_OUT,
            elements_before: 0,
            copies: 4,
        }];
        let t = measured(&head, &stamps, &[], &mut FrameNames::new(None));
        assert_eq!(t.unlogged, 3);
        assert_eq!(
            t.copies,
            [MeasuredCopy {
                start_ns: 10,
                end_ns: 10,
                out: true,
                bytes: 512,
                copies: 4
            }]
        );
    }
}
