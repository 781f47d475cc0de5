package load

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	flog "fortio.org/log"
)

// LogTally takes fortio's log lines (one per failed request when a backend
// dies mid-window: tens of thousands a run) off the terminal: each line
// goes whole to a file, and is counted by its message, numbers masked, so
// that a run's errors read as a few distinct messages with counts.
type LogTally struct {
	mu     sync.Mutex
	w      io.Writer
	counts map[string]int
	order  []string // messages in the order first seen since the last Drain
}

// ErrorCount is one distinct message and how many lines had it.
type ErrorCount struct {
	// Message is the message, its digits replaced by N and cut to 160 bytes.
	Message string
	// Count is how many lines had it.
	Count int
}

// maxMessage is how much of a message is kept to tell messages apart.
const maxMessage = 160

var digits = regexp.MustCompile(`[0-9]+`)

// RouteFortioLog sends fortio's log to a new tally that writes every line
// to w, and returns the tally. Nothing of fortio's reaches the terminal
// after it.
func RouteFortioLog(w io.Writer) *LogTally {
	t := NewLogTally(w)
	flog.SetOutput(t)
	return t
}

// NewLogTally returns a tally that writes every line to w: for logs that
// are not this process's fortio's (a cluster's loadgen pods').
func NewLogTally(w io.Writer) *LogTally {
	return &LogTally{w: w, counts: map[string]int{}}
}

// Write writes p to the file and counts each of its lines.
func (t *LogTally) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line == "" {
			continue
		}
		msg := line
		var j struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &j) == nil && j.Msg != "" {
			msg = j.Msg
		}
		msg = digits.ReplaceAllString(msg, "N")
		if len(msg) > maxMessage {
			msg = msg[:maxMessage] + "…"
		}
		if t.counts[msg] == 0 {
			t.order = append(t.order, msg)
		}
		t.counts[msg]++
	}
	if _, err := t.w.Write(p); err != nil {
		return 0, fmt.Errorf("fortio log: %w", err)
	}
	return len(p), nil
}

// Drain returns the messages counted since the last Drain, most frequent
// first (first seen first among equals), and starts counting afresh.
func (t *LogTally) Drain() []ErrorCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ErrorCount, len(t.order))
	for i, m := range t.order {
		out[i] = ErrorCount{Message: m, Count: t.counts[m]}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	t.counts, t.order = map[string]int{}, nil
	return out
}

// Summary is one line for a run's log: the first few distinct messages
// with their counts, then how many more; "" when there were none.
func Summary(cs []ErrorCount, few int) string {
	if len(cs) == 0 {
		return ""
	}
	total := 0
	for _, c := range cs {
		total += c.Count
	}
	parts := make([]string, 0, few+1)
	for i, c := range cs {
		if i == few {
			parts = append(parts, fmt.Sprintf("and %d other messages", len(cs)-few))
			break
		}
		parts = append(parts, fmt.Sprintf("%d× %q", c.Count, c.Message))
	}
	return fmt.Sprintf("%d loadgen log lines: %s", total, strings.Join(parts, ", "))
}
