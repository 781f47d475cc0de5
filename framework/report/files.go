package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Format is a report's file format.
type Format string

// The formats a report is written in.
const (
	FormatHTML     Format = "html" // one self-contained page with charts
	FormatMarkdown Format = "md"   // tables for CI summaries and PR comments
	// FormatCSV is one row per run, for spreadsheets (see CSV).
	FormatCSV Format = "csv"
	// FormatSMP is the Service Mesh Performance results, as Meshery
	// reads them (see SMP).
	FormatSMP Format = "smp"
)

// Formats are the formats a report is written in by default, in the
// order they are written: what the main job writes beside its results.
var Formats = []Format{FormatHTML, FormatMarkdown}

// AllFormats is every format, in the order ParseFormats names them.
var AllFormats = []Format{FormatHTML, FormatMarkdown, FormatCSV, FormatSMP}

// Ext is the file name extension of a format's file: html, md, csv, and
// smp.yaml for SMP's YAML.
func (f Format) Ext() string {
	if f == FormatSMP {
		return "smp.yaml"
	}
	return string(f)
}

// ParseFormats reads a comma-separated list such as "html,md" or "csv".
func ParseFormats(s string) ([]Format, error) {
	var out []Format
	for _, f := range strings.Split(s, ",") {
		name := Format(strings.TrimSpace(f))
		if !slices.Contains(AllFormats, name) {
			return nil, fmt.Errorf("format %q: want html, md, csv or smp, or several comma-separated", f)
		}
		out = append(out, name)
	}
	return out, nil
}

// Render writes the report of ins in format f.
func Render(w io.Writer, f Format, ins []Input, o Options) error {
	switch f {
	case FormatHTML:
		return HTML(w, ins, o)
	case FormatMarkdown:
		return Markdown(w, ins, o)
	case FormatCSV:
		return CSV(w, ins)
	case FormatSMP:
		return SMP(w, ins)
	}
	return fmt.Errorf("unknown report format %q", f)
}

// WriteFiles renders ins in every format of fs and writes dir/<name>.<ext>
// for each, returning the paths. One input is named after its results file;
// several after all of them. Every format is rendered before any file is
// written, so a failure leaves no half-written report.
func WriteFiles(dir string, ins []Input, fs []Format, o Options) ([]string, error) {
	if len(ins) == 0 {
		return nil, errors.New("write report: no results")
	}
	names := make([]string, len(ins))
	for i, in := range ins {
		names[i] = in.Base()
	}
	name := names[0]
	if len(ins) > 1 {
		name = "compare-" + strings.Join(names, "-vs-")
	}
	bufs := make([]bytes.Buffer, len(fs))
	for i, f := range fs {
		if err := Render(&bufs[i], f, ins, o); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write report: %w", err)
	}
	var paths []string
	for i, f := range fs {
		p := filepath.Join(dir, name+"."+f.Ext())
		if err := WriteAtomic(p, bufs[i].Bytes(), 0o644); err != nil {
			return paths, fmt.Errorf("write report: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// WriteBeside writes the HTML and Markdown reports of a results file just
// written at jsonPath next to it, priced with the fixture at prices ("" for
// the example prices), and returns their paths: what the main job does at
// its end.
func WriteBeside(jsonPath string, r *Results, prices string) ([]string, error) {
	p, err := LoadPrices(prices)
	if err != nil {
		return nil, err
	}
	return WriteFiles(filepath.Dir(jsonPath), []Input{{File: jsonPath, Results: r}}, Formats, Options{Prices: p})
}
