//! libFuzzer target: arbitrary bytes as cyclictest input (see rtlab_fuzz::harness).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlab_formats::import::ImportFormat;

fuzz_target!(|data: &[u8]| rtlab_fuzz::harness::exercise(ImportFormat::Cyclictest, data));
