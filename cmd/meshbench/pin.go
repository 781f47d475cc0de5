package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// caddyModule is the module whose version in go.mod pins the local
// target's sidecar (a go.mod tool dependency).
const caddyModule = "github.com/caddyserver/caddy/v2"

// pinCmd is `meshbench pin [GO.MOD]`: the sidecar a go.mod pins, written
// as -sidecar and -candidate take it (caddy@v2.11.9), so that a pull
// request's gate compares the base branch's pin with the head's.
func pinCmd(args []string, stdout io.Writer) error {
	path := "go.mod"
	switch len(args) {
	case 0:
	case 1:
		path = args[0]
	default:
		return errors.New("pin: want at most one go.mod\n" + usage)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	v, err := caddyPin(data)
	if err != nil {
		return fmt.Errorf("pin: %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "caddy@%s\n", v)
	return nil
}

// caddyPin reads the version go.mod requires of caddyModule, in a require
// block or on a require line. It refuses a go.mod without it, one that
// requires it twice, and one that replaces it (the version would not say
// what is built).
func caddyPin(gomod []byte) (string, error) {
	var versions []string
	open := "" // the directive of the block being read: require, replace, …
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "//")
		f := strings.Fields(text)
		dir := open
		switch {
		case len(f) == 0:
			continue
		case open != "" && f[0] == ")":
			open = ""
			continue
		case open == "" && len(f) == 2 && f[1] == "(":
			open = f[0]
			continue
		case open == "":
			dir, f = f[0], f[1:]
		}
		if len(f) < 2 || f[0] != caddyModule {
			continue
		}
		switch dir {
		case "replace":
			return "", fmt.Errorf("line %d: %s is replaced, so its version does not say what is built; gate with -sidecar and -candidate by hand", line, caddyModule)
		case "require":
			if !strings.HasPrefix(f[1], "v") {
				return "", fmt.Errorf("line %d: %s %q is not a version", line, caddyModule, f[1])
			}
			versions = append(versions, f[1])
		}
	}
	switch len(versions) {
	case 0:
		return "", fmt.Errorf("no require of %s: the local sidecar is not pinned here", caddyModule)
	case 1:
		return versions[0], nil
	}
	return "", fmt.Errorf("%s is required %d times (%s)", caddyModule, len(versions), strings.Join(versions, ", "))
}
