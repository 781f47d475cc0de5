package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/framework/testbed"
)

// JournalSchema names the journal format: JSON lines, the first a
// journalHead, each later one a journalLine.
const JournalSchema = "meshbench.journal/v1"

// JournalExt ends a journal's file name: <started>-<target>.journal.jsonl
// beside the results file it becomes.
const JournalExt = ".journal.jsonl"

// Journal is a run's results as they are measured: each record is
// appended and synced to disk as soon as it is measured, so that a run
// that is interrupted, runs out of disk or is killed keeps what it
// measured. A run that ends writes its results file from the same records
// and removes its journal; a journal left behind is read by [Open] (and
// `meshbench report`) as a partial results file, and [Recover] turns one
// into a results file at the next start.
type Journal struct {
	// Path is the journal file's path.
	Path string
	mu   sync.Mutex
	f    *os.File
	err  error // the first append that failed: later ones are not tried
}

// journalHead is a journal's first line.
type journalHead struct {
	Schema  string    `json:"schema"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Target  string    `json:"target"`
	Command []string  `json:"command"`
	// Settings are the harness flags in effect.
	Settings any `json:"settings"`
}

// journalLine is every later line: a record, or the environment once the
// target is set up.
type journalLine struct {
	Record      *Record              `json:"record,omitempty"`
	Environment *testbed.Environment `json:"environment,omitempty"`
}

// JournalPath is where a run started at started on target tgt journals.
func JournalPath(dir string, started time.Time, tgt string) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s%s", started.UTC().Format("20060102T150405Z"), tgt, JournalExt))
}

// CreateJournal creates dir when needed and the journal in it, and writes
// its head. It is how a run checks its results directory before it measures anything:
// a directory that cannot be created or written fails here.
func CreateJournal(dir string, started time.Time, tgt string, command []string, settings any) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	path := JournalPath(dir, started, tgt)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	j := &Journal{Path: path, f: f}
	head := journalHead{Schema: JournalSchema, PID: os.Getpid(), Started: started, Target: tgt, Command: command, Settings: settings}
	if err := j.append(head); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("results directory: %w", err)
	}
	return j, nil
}

// Record appends one measured run, synced to disk.
func (j *Journal) Record(r Record) error { return j.append(journalLine{Record: &r}) }

// Environment appends the target's environment, once it is known.
func (j *Journal) Environment(e testbed.Environment) error {
	return j.append(journalLine{Environment: &e})
}

func (j *Journal) append(v any) error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	data, err := json.Marshal(v)
	if err == nil {
		_, err = j.f.Write(append(data, '\n'))
	}
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		j.err = fmt.Errorf("journal %s: %w", j.Path, err)
	}
	return j.err
}

// Err is the first append that failed, or nil.
func (j *Journal) Err() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Remove closes the journal and deletes it: its results file holds it all.
func (j *Journal) Remove() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.f.Close()
	return os.Remove(j.Path)
}

// ReadJournal reads a journal back as a partial results file: its records
// in order, the environment, and Partial saying why. A last line cut short
// (the run killed mid-write, or the disk full) is left out and said; any
// other line that does not decode is an error naming the file and line.
func ReadJournal(path string) (*Results, int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	var head journalHead
	if err := json.Unmarshal(lines[0], &head); err != nil || head.Schema != JournalSchema {
		return nil, 0, fmt.Errorf("%s:1: not a meshbench journal (want schema %q)", path, JournalSchema)
	}
	r := &Results{Schema: Schema, Started: head.Started, Command: head.Command, Settings: head.Settings}
	r.Environment.Target = head.Target
	cut := ""
	for i, line := range lines[1:] {
		var l journalLine
		if err := json.Unmarshal(line, &l); err != nil {
			if i == len(lines)-2 && !bytes.HasSuffix(data, []byte("\n")) {
				cut = "; its last line was cut short and is left out"
				break
			}
			return nil, 0, fmt.Errorf("%s:%d: %w", path, i+2, err)
		}
		if l.Environment != nil {
			r.Environment = *l.Environment
		}
		if l.Record != nil {
			r.Records = append(r.Records, *l.Record)
			if l.Record.Run != nil && l.Record.Load != nil {
				r.Finished = l.Record.Load.Start.Add(l.Record.Load.Elapsed)
			}
		}
	}
	if r.Finished.IsZero() {
		r.Finished = r.Started
	}
	r.Comparisons = Compare(r.Records)
	r.Proofs = Proofs(r.Records)
	r.Partial = fmt.Sprintf("the run (pid %d) stopped before it finished: this is its journal, %d runs%s", head.PID, len(r.Records), cut)
	return r, head.PID, nil
}

// Recover finds the journals in dir that no live process is writing, the
// ones an earlier run left when it was killed, and turns each into a
// partial results file beside it, removing the journal. It returns one
// line per journal for the log. A journal it cannot read is named and
// left in place.
func Recover(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+JournalExt))
	var out []string
	for _, p := range paths {
		r, pid, err := ReadJournal(p)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s: left by an earlier run, and unreadable (%v); it stays for you to look at", p, err))
			continue
		case pid != os.Getpid() && alive(pid):
			out = append(out, fmt.Sprintf("%s: another run (pid %d) is writing it; its results will be its own", p, pid))
			continue
		}
		dst := strings.TrimSuffix(p, JournalExt) + ".json"
		data, err := json.MarshalIndent(r, "", " ")
		if err == nil {
			err = WriteAtomic(dst, data, 0o644)
		}
		if err == nil {
			err = os.Remove(p)
		}
		if err != nil {
			out = append(out, fmt.Sprintf("%s: left by an earlier run that was killed (pid %d, started %s); recovering it failed: %v",
				p, pid, r.Started.UTC().Format(time.RFC3339), err))
			continue
		}
		out = append(out, fmt.Sprintf("%s: left by an earlier run that was killed (pid %d, started %s): its %d measured runs are now %s, marked partial",
			p, pid, r.Started.UTC().Format(time.RFC3339), len(r.Records), dst))
	}
	return out
}

// alive reports whether a process pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
