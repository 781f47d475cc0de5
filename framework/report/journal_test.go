package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A journal reads back as a partial results file; a last line cut short
// (killed mid-write, disk full) is left out and said; Recover turns a dead
// run's journal into a results file and removes it.
func TestJournalRoundTripAndRecover(t *testing.T) {
	src, err := Read("testdata/local.json")
	require.NoError(t, err)
	dir := t.TempDir()
	started := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	j, err := CreateJournal(dir, started, "local", []string{"bench"}, map[string]int{"count": 3})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "20261201T100000Z-local.journal.jsonl"), j.Path)
	require.NoError(t, j.Environment(src.Environment))
	for _, r := range src.Records[:3] {
		require.NoError(t, j.Record(r))
	}
	f, err := os.OpenFile(j.Path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"record":{"benchm`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	r, pid, err := ReadJournal(j.Path)
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), pid)
	assert.Len(t, r.Records, 3)
	assert.Equal(t, src.Environment.Target, r.Environment.Target)
	assert.Equal(t, "the run (pid "+itoa(pid)+") stopped before it finished: this is its journal, 3 runs; its last line was cut short and is left out", r.Partial)

	// A journal a live process writes is left alone (pid 1 lives).
	other := filepath.Join(dir, "20261201T090000Z-local"+JournalExt)
	head, _ := json.Marshal(journalHead{Schema: JournalSchema, PID: 1, Started: started, Target: "local"})
	require.NoError(t, os.WriteFile(other, append(head, '\n'), 0o644))
	lines := Recover(dir)
	require.Len(t, lines, 2)
	assert.Equal(t, other+": another run (pid 1) is writing it; its results will be its own", lines[0])
	assert.True(t, strings.HasSuffix(lines[1], "its 3 measured runs are now "+filepath.Join(dir, "20261201T100000Z-local.json")+", marked partial"), lines[1])
	assert.NoFileExists(t, j.Path)
	got, err := Read(filepath.Join(dir, "20261201T100000Z-local.json"))
	require.NoError(t, err)
	assert.Len(t, got.Records, 3)
	assert.NotEmpty(t, got.Comparisons)
	assert.Contains(t, got.Partial, "stopped before it finished")
}

func TestJournalRefusesWhatIsNotOne(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x"+JournalExt)
	require.NoError(t, os.WriteFile(p, []byte("{\"schema\":\"other\"}\n"), 0o644))
	_, _, err := ReadJournal(p)
	assert.EqualError(t, err, p+`:1: not a meshbench journal (want schema "meshbench.journal/v1")`)
	_, err = CreateJournal("/proc/meshbench-nope", time.Now(), "local", nil, nil)
	assert.ErrorContains(t, err, "results directory: mkdir /proc/meshbench-nope")
}

// WriteAtomic replaces a file whole and leaves no temporary behind; a
// write that cannot happen leaves the old file as it was.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	require.NoError(t, WriteAtomic(p, []byte("old"), 0o644))
	require.NoError(t, WriteAtomic(p, []byte("new"), 0o644))
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "new", string(data))
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temporary file left")
	assert.Error(t, WriteAtomic(filepath.Join(dir, "missing", "r.json"), []byte("x"), 0o644))
	data, _ = os.ReadFile(p)
	assert.Equal(t, "new", string(data))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
