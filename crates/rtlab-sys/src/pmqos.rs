//! `/dev/cpu_dma_latency`: the PM QoS request that keeps CPUs out of deep idle states.

use std::fs::File;
use std::io::Write;

const DMA_LATENCY_PATH: &str = "/dev/cpu_dma_latency";

/// Holds a CPU DMA latency request (in µs, 0 = no deep C-states) for as long as it lives;
/// the kernel drops the request when the file is closed.
#[derive(Debug)]
pub struct DmaLatencyGuard {
    // Never read: the open descriptor *is* the request; dropping the File closes it.
    _file: File,
}

impl DmaLatencyGuard {
    pub fn hold(target_us: i32) -> crate::Result<Self> {
        if target_us < 0 {
            return Err(crate::SysError::Invalid(format!("cpu_dma_latency target must be >= 0 µs, got {target_us}")));
        }
        let mut file = File::options()
            .write(true)
            .open(DMA_LATENCY_PATH)
            .map_err(|e| crate::SysError::from_io("open /dev/cpu_dma_latency", e))?;
        // The kernel expects the raw 4-byte binary value (an ASCII hex string also works,
        // but binary is the documented form).
        file.write_all(&target_us.to_ne_bytes())
            .map_err(|e| crate::SysError::from_io("write /dev/cpu_dma_latency", e))?;
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_target_is_invalid() {
        assert!(matches!(DmaLatencyGuard::hold(-1), Err(crate::SysError::Invalid(_))));
    }

    #[test]
    fn hold_zero_or_explain() {
        match DmaLatencyGuard::hold(0) {
            Ok(guard) => drop(guard),
            // Unprivileged or the device is absent (containers): an error naming the op.
            Err(e) => assert!(e.to_string().contains("cpu_dma_latency"), "{e}"),
        }
    }
}
