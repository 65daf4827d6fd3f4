"""What operators see of the kernel: Prometheus metrics, OpenTelemetry traces, and the
counters and log lines of committed work."""
