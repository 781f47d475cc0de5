package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		cmd  string
	}{
		{[]string{"--root", "/run/x", "--log", "/l", "--log-format", "json", "create", "--bundle", "/b", "id"}, "create"},
		{[]string{"--systemd-cgroup", "exec", "--process", "/p.json", "id"}, "exec"},
		{[]string{"--version"}, ""},
	} {
		if got, _ := subcommand(tc.args); got != tc.cmd {
			t.Errorf("%v: got %q, want %q", tc.args, got, tc.cmd)
		}
	}
	_, rest := subcommand([]string{"--root", "r", "create", "--bundle=/b", "id"})
	if got := flagValue(rest, "--bundle", "-b"); got != "/b" {
		t.Errorf("bundle: got %q", got)
	}
}

func TestRewriteDropsMissingCaps(t *testing.T) {
	raw, err := os.ReadFile("testdata/config.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"CAP_CHOWN": true, "CAP_SYS_ADMIN": true}
	if err := rewrite(file, false, allowed); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(file)
	var spec struct {
		Process struct {
			Capabilities map[string][]string `json:"capabilities"`
		} `json:"process"`
	}
	if err := json.Unmarshal(out, &spec); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"bounding":  {"CAP_CHOWN", "CAP_SYS_ADMIN"},
		"effective": {"CAP_SYS_ADMIN"},
		"permitted": {"CAP_SYS_ADMIN"},
	}
	if !reflect.DeepEqual(spec.Process.Capabilities, want) {
		t.Errorf("got %v, want %v", spec.Process.Capabilities, want)
	}
	// 64-bit limits survive exactly (no float64 round trip).
	if !strings.Contains(string(out), "9223372036854771712") {
		t.Errorf("memory limit changed: %s", out)
	}
}

func TestFilterSpecIgnoresOtherCommands(t *testing.T) {
	if err := filterSpec([]string{"state", "id"}); err != nil {
		t.Fatal(err)
	}
}
