package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/history"
	"github.com/meshbench/meshbench/framework/report"
)

// historyCmd is `meshbench history [flags] RESULTS...`: the change points
// of every comparable series of runs, as Markdown on stdout (and
// history.md and history.html under -o). It exits 2 on bad input (a flag,
// a file that is truncated or not a results file), 1 with -fail-on-change
// when a series' newest run sits after a change past the limit, else 0.
func historyCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("meshbench history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("o", "", "also write history.md and history.html to this directory")
	pvalue := fs.Float64("p", history.DefaultPValue, "largest p-value of a change point (Student's t-test, as Apache Otava's max_pvalue)")
	window := fs.Int("window", history.DefaultWindow, "runs per E-divisive window (Otava's window_len), ≥ 2")
	follow := fs.Bool("follow-version", false, "keep a mesh's runs in one series across sidecar versions and variants (each change is noted at its run)")
	failOn := fs.Float64("fail-on-change", -1, "exit 1 when a series' newest run sits after a change point worse by more than this many percent (default: off)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	failSet := false
	fs.Visit(func(f *flag.Flag) { failSet = failSet || f.Name == "fail-on-change" })
	switch {
	case fs.NArg() == 0:
		return errors.New("history: no results file or directory given\n" + usage)
	case !(*pvalue > 0 && *pvalue < 1):
		return fmt.Errorf("history: -p %v: want a level between 0 and 1, e.g. 0.001", *pvalue)
	case *window < 2:
		return fmt.Errorf("history: -window %d: want at least 2 runs", *window)
	case failSet && !(*failOn >= 0):
		return fmt.Errorf("history: -fail-on-change %v: want a percentage ≥ 0", *failOn)
	}
	files, err := resultsFiles(fs.Args())
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	ins, err := report.Open(files...)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	h, err := history.Build(ins, history.Config{Options: history.Options{PValue: *pvalue, Window: *window}, FollowVersion: *follow})
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	var md bytes.Buffer
	if err := h.Markdown(&md); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if *failOn >= 0 {
		md.WriteString(regressionLines(h.Regressions(*failOn), *failOn))
	}
	if _, err := stdout.Write(md.Bytes()); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if *dir != "" {
		if err := writeHistory(*dir, h, md.Bytes()); err != nil {
			return fmt.Errorf("history: -o: %w", err)
		}
	}
	if regs := h.Regressions(*failOn); *failOn >= 0 && len(regs) > 0 {
		return &exitError{1, fmt.Errorf("history: %d series changed for the worse by more than %g %% (-fail-on-change)", len(regs), *failOn)}
	}
	return nil
}

// regressionLines is the Markdown section -fail-on-change adds.
func regressionLines(regs []history.Regression, pct float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Worse by more than %g %% at the newest run\n\n", pct)
	if len(regs) == 0 {
		b.WriteString("None: no series' last change point is worse by more than that.\n")
		return b.String()
	}
	for _, r := range regs {
		fmt.Fprintf(&b, "- group %d, %s, %s: %+.1f %% from run %d (%s) on\n", r.Group, r.Series.Scenario, r.Series.Metric.Label(),
			r.Change.Percent, r.Change.Run+1, filepath.Base(r.Change.File))
	}
	return b.String()
}

func writeHistory(dir string, h *history.History, md []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := h.HTML(&page); err != nil {
		return err
	}
	if err := report.WriteAtomic(filepath.Join(dir, "history.md"), md, 0o644); err != nil {
		return err
	}
	return report.WriteAtomic(filepath.Join(dir, "history.html"), page.Bytes(), 0o644)
}

// resultsExts end the names of results files: JSON, gzipped JSON (as
// results are kept in a repository) or a journal.
var resultsExts = []string{".json", ".json.gz", report.JournalExt}

// besideResults end the names of what runs and reports write next to
// results files, which a directory walk passes over: logs, reports and
// profiles.
var besideResults = []string{".log", ".md", ".html", ".pprof"}

// resultsFiles expands the arguments: a file is taken as it is (and
// refused unless named like a results file), a directory is walked for
// results files, passing over hidden entries and what besideResults
// names; anything else found there is refused, naming it.
func resultsFiles(args []string) ([]string, error) {
	var files []string
	var errs []error
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !st.IsDir() {
			if !hasExt(a, resultsExts) {
				errs = append(errs, notResults(a))
				continue
			}
			files = append(files, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case p != a && strings.HasPrefix(d.Name(), "."):
				if d.IsDir() {
					return filepath.SkipDir
				}
			case d.IsDir() || hasExt(p, besideResults):
			case hasExt(p, resultsExts):
				files = append(files, p)
			default:
				errs = append(errs, notResults(p))
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no results file in %s", strings.Join(args, ", "))
	}
	return files, nil
}

func hasExt(p string, exts []string) bool {
	return slices.ContainsFunc(exts, func(e string) bool { return strings.HasSuffix(p, e) })
}

func notResults(p string) error {
	return fmt.Errorf("%s: not a results file (want a name ending in %s)", p, strings.Join(resultsExts, ", "))
}
