//! libFuzzer target: arbitrary bytes as oslat input (see rtlab_fuzz::harness).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlab_formats::import::ImportFormat;

fuzz_target!(|data: &[u8]| rtlab_fuzz::harness::exercise(ImportFormat::Oslat, data));
