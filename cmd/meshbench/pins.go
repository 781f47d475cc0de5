package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/mesh"
)

// A pin is one version this tree fixes for something the upgrade gate can
// compare: the local sidecar, the kind sidecar, or a mesh adapter's release.
type pin struct {
	Name    string // local, kind-sidecar, or a mesh adapter's name
	Version string // as the gate takes it: caddy@v2.11.9, nginx@bookworm, 1.28.0
}

// Pins a pull request can change, and where each is read:
//   - local: Caddy's version in go.mod (the local target's sidecar);
//   - kind-sidecar: NGINX_SUITE in hack/offline/versions.env, the Debian
//     suite whose nginx the kind sidecar image is built from;
//   - every mesh adapter that installs a release: its pinned version.
const (
	localPin       = "local"
	kindSidecarPin = "kind-sidecar"
	versionsEnv    = "hack/offline/versions.env"
)

// pinsOf reads the pins of the module rooted at root. The adapters' pins
// are this binary's own, so run it in the tree whose pins it should print.
func pinsOf(root string) ([]pin, error) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	caddy, err := caddyPin(gomod)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, "go.mod"), err)
	}
	env := filepath.Join(root, versionsEnv)
	envData, err := os.ReadFile(env)
	if err != nil {
		return nil, err
	}
	suite, err := envValue(envData, "NGINX_SUITE")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", env, err)
	}
	pins := []pin{{localPin, "caddy@" + caddy}, {kindSidecarPin, "nginx@" + suite}}
	for _, name := range mesh.Names() {
		m, err := mesh.New(name)
		if err != nil {
			return nil, fmt.Errorf("mesh %s: %w", name, err)
		}
		if v := mesh.DefaultVersion(m); v != "" {
			pins = append(pins, pin{name, v})
		}
	}
	return pins, nil
}

// envAssign is a shell variable assignment, as versions.env writes them;
// plainWord is a value that needs no quoting or expansion.
var (
	envAssign = regexp.MustCompile(`^([A-Z_][A-Z0-9_]*)=(.*)$`)
	plainWord = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
)

// envValue reads the plain value of key in a file of shell assignments
// (versions.env): it refuses a missing key, one set twice, and a value
// that is not a plain word (quoted, expanded, empty).
func envValue(data []byte, key string) (string, error) {
	var vals []string
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		m := envAssign.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil || m[1] != key {
			continue
		}
		if !plainWord.MatchString(m[2]) {
			return "", fmt.Errorf("line %d: %s=%s is not a plain version or suite name", line, key, m[2])
		}
		vals, lines = append(vals, m[2]), append(lines, line)
	}
	switch len(vals) {
	case 0:
		return "", fmt.Errorf("no %s= line", key)
	case 1:
		return vals[0], nil
	}
	return "", fmt.Errorf("%s is set %d times (lines %v)", key, len(vals), lines)
}

// readPins parses what `meshbench pins` prints (NAME=VERSION lines); an
// error names the line.
func readPins(data []byte) ([]pin, error) {
	var pins []pin
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, version, ok := strings.Cut(text, "=")
		if !ok || name == "" || version == "" || strings.ContainsAny(text, " \t") {
			return nil, fmt.Errorf("line %d: %q is not NAME=VERSION", line, text)
		}
		if slices.ContainsFunc(pins, func(p pin) bool { return p.Name == name }) {
			return nil, fmt.Errorf("line %d: %s pinned twice", line, name)
		}
		pins = append(pins, pin{name, version})
	}
	return pins, sc.Err()
}

// A pinChange is one pin a pull request changes: the gate's reference and
// candidate.
type pinChange struct {
	Name, Reference, Candidate string
}

// changedPins compares a base tree's pins with the head's. A pin only one
// side has is a change too (a new mesh adapter has no reference: its
// Reference is "").
func changedPins(base, head []pin) []pinChange {
	var out []pinChange
	for _, h := range head {
		i := slices.IndexFunc(base, func(b pin) bool { return b.Name == h.Name })
		switch {
		case i < 0:
			out = append(out, pinChange{h.Name, "", h.Version})
		case base[i].Version != h.Version:
			out = append(out, pinChange{h.Name, base[i].Version, h.Version})
		}
	}
	return out
}

// pinsCmd is `meshbench pins [-base FILE]`: every pin of the module it
// runs in, as NAME=VERSION lines; with -base (a base tree's `meshbench
// pins` output), only the pins that changed, as NAME REFERENCE CANDIDATE.
func pinsCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("meshbench pins", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseFile := fs.String("base", "", "a base tree's `meshbench pins` output: print only what changed, as NAME REFERENCE CANDIDATE")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return errors.New("pins: no arguments, only -base FILE\n" + usage)
	}
	root, err := moduleRoot()
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	head, err := pinsOf(root)
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	if *baseFile == "" {
		for _, p := range head {
			fmt.Fprintf(stdout, "%s=%s\n", p.Name, p.Version)
		}
		return nil
	}
	data, err := os.ReadFile(*baseFile)
	if err != nil {
		return fmt.Errorf("pins: -base: %w", err)
	}
	base, err := readPins(data)
	if err != nil {
		return fmt.Errorf("pins: -base %s: %w", *baseFile, err)
	}
	for _, c := range changedPins(base, head) {
		fmt.Fprintf(stdout, "%s %s %s\n", c.Name, cmpOr(c.Reference, "-"), c.Candidate)
	}
	return nil
}
