package benchmarks

import "testing"

// BenchmarkLoadgenCeiling puts the in-process fortio loadgen next to wrk
// against the same baseline backend at c=32, interleaved, with each one's
// own CPU: a loadgen that saturates first would cap every other figure.
// fortio runs with and without HDR recording (loadgen=fortio and
// loadgen=fortio-nohdr, alternating which goes first), which shows what
// recording every latency costs. It skips without wrk (apt-get install wrk).
func BenchmarkLoadgenCeiling(b *testing.B) { mb.LoadgenCeiling(b, 32) }
