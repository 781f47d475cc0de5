package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The layout of every HDR histogram meshbench records: values are
// nanoseconds, tracked from 1 ns to 60 s with 3 significant digits. Values up
// to 2047 ns are exact; above, each value is kept within 1/1024 (under
// 0.1 %) of itself, so every latency from 1 µs to 60 s keeps 3 significant
// digits. A histogram takes about 220 KiB in memory and a few hundred bytes
// encoded.
const (
	HDRLowest  int64 = 1
	HDRHighest       = int64(60 * time.Second)
	HDRSigFigs       = 3
)

// HDR is an HDR histogram of latencies in nanoseconds at meshbench's layout
// (HDRLowest, HDRHighest, HDRSigFigs). Unlike fortio's histogram it keeps
// 3 significant digits over the whole range, tails above 1 s included.
//
// Its JSON form is a string: HdrHistogram's compact encoding (base64 of the
// V2 compressed encoding, "HISTFAAA…"), which the HdrHistogram libraries of
// every language decode. A nil *HDR means "not recorded".
//
// An HDR is not safe for concurrent use: record into one per thread and
// merge them with MergeHDR.
type HDR struct {
	h *hdrhistogram.Histogram
}

// NewHDR returns an empty histogram at meshbench's layout.
func NewHDR() *HDR {
	return &HDR{h: hdrhistogram.New(HDRLowest, HDRHighest, HDRSigFigs)}
}

// Record adds one latency in nanoseconds. Values below 0 are recorded as 0
// and values above HDRHighest as HDRHighest, so Record never fails and
// never allocates.
func (h *HDR) Record(ns int64) {
	ns = min(max(ns, 0), HDRHighest)
	_ = h.h.RecordValue(ns) // cannot fail in range
}

// Count is the number of values recorded; 0 for a nil histogram.
func (h *HDR) Count() int64 {
	if h == nil {
		return 0
	}
	return h.h.TotalCount()
}

// Percentile returns the p-th percentile, p in [0, 100], in seconds: the
// value at rank max(1, round(p/100 × Count)) in sorted order, reported as the
// highest value HDR cannot tell apart from it (so within 0.1 % above the
// exact sample). p >= 100 gives the maximum. It returns 0 when h is nil or
// empty.
func (h *HDR) Percentile(p float64) float64 {
	if h.Count() == 0 {
		return 0
	}
	return float64(h.h.ValueAtPercentile(p)) / 1e9
}

// Max returns the largest value recorded, in seconds, within 0.1 %; 0 when
// h is nil or empty.
func (h *HDR) Max() float64 { return h.Percentile(100) }

// Mean returns the mean of the values recorded, in seconds, within 0.1 %; 0
// when h is nil or empty.
func (h *HDR) Mean() float64 {
	if h.Count() == 0 {
		return 0
	}
	return h.h.Mean() / 1e9
}

// Equal reports whether h and o hold the same counts at the same layout.
func (h *HDR) Equal(o *HDR) bool {
	if h == nil || o == nil {
		return h == o
	}
	return h.h.Equals(o.h)
}

// Encode returns the compact encoding: base64 of HDR's V2 compressed
// encoding.
func (h *HDR) Encode() (string, error) {
	b, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("stats: encode HDR histogram: %w", err)
	}
	return string(b), nil
}

// DecodeHDR reads a histogram written by Encode (or by any HdrHistogram
// library in V2 compressed base64 form). It refuses a histogram recorded at
// another layout, which could not be merged with meshbench's without loss.
func DecodeHDR(s string) (*HDR, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("stats: decode HDR histogram: %w", err)
	}
	if lo, hi, sf := h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(); lo != HDRLowest || hi != HDRHighest || sf != HDRSigFigs {
		return nil, fmt.Errorf("stats: HDR histogram recorded from %d to %d with %d significant digits, want %d to %d with %d (meshbench's layout: ns, 1 ns to 60 s)",
			lo, hi, sf, HDRLowest, HDRHighest, HDRSigFigs)
	}
	return &HDR{h: h}, nil
}

// MarshalJSON writes the compact encoding as a JSON string.
func (h *HDR) MarshalJSON() ([]byte, error) {
	s, err := h.Encode()
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// UnmarshalJSON reads the compact encoding from a JSON string.
func (h *HDR) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("stats: HDR histogram: want a string with its compact encoding: %w", err)
	}
	d, err := DecodeHDR(s)
	if err != nil {
		return err
	}
	*h = *d
	return nil
}

// MergeHDR adds histograms recorded by several threads or load generators
// into a new one, count by count: the result is exactly the histogram a
// single recorder would have filled with every sample. Nil inputs are
// skipped; with none left the result is nil. The inputs are not changed.
func MergeHDR(hs ...*HDR) (*HDR, error) {
	var out *HDR
	for i, h := range hs {
		if h == nil {
			continue
		}
		if out == nil {
			out = NewHDR()
		}
		if dropped := out.h.Merge(h.h); dropped != 0 {
			return nil, fmt.Errorf("stats: merge HDR input %d: %d values fell outside meshbench's layout", i, dropped)
		}
	}
	return out, nil
}

// Scaled returns a new histogram holding every value of h times k (k > 0):
// the latencies a machine k times slower would have recorded, within
// HDR's 0.1 %. Each of h's buckets moves whole, its count at its highest
// value times k. A nil h gives nil.
func (h *HDR) Scaled(k float64) (*HDR, error) {
	if h == nil {
		return nil, nil
	}
	if !(k > 0) || math.IsInf(k, 0) {
		return nil, fmt.Errorf("stats: scale an HDR histogram by %g: want a finite factor > 0", k)
	}
	out := NewHDR()
	for _, b := range h.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		v := min(max(int64(math.Round(float64(b.To)*k)), 0), HDRHighest)
		if err := out.h.RecordValues(v, b.Count); err != nil {
			return nil, fmt.Errorf("stats: scale an HDR histogram by %g: %w", k, err)
		}
	}
	return out, nil
}
