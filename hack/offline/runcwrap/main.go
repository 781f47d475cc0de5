// Command runcwrap is a runc wrapper for hosts whose capability bounding set
// lacks some capabilities (CAP_SYS_RESOURCE on our CI machines).
//
// Docker asks for every capability it knows when it starts a privileged
// container, and runc then fails with "unable to apply caps". Set as
// dockerd's default runtime, runcwrap removes from the OCI spec (config.json
// for create and run, the process file for exec) every capability that is
// not in its own bounding set, and then execs the real runc with the same
// arguments.
//
// The real runc is the first of realRuncPaths that is not runcwrap itself;
// set another one at build time with -ldflags "-X main.realRunc=/path".
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// realRunc, when set at build time, is the runc to exec.
var realRunc = ""

var realRuncPaths = []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc"}

// capNames maps capability numbers to the names OCI specs use.
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",
	"CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP",
	"CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

func main() {
	if err := filterSpec(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "runcwrap: %v\n", err)
		os.Exit(1)
	}
	runc, err := findRunc()
	if err != nil {
		fmt.Fprintf(os.Stderr, "runcwrap: %v\n", err)
		os.Exit(1)
	}
	argv := append([]string{runc}, os.Args[1:]...)
	if err := syscall.Exec(runc, argv, os.Environ()); err != nil {
		fmt.Fprintf(os.Stderr, "runcwrap: exec %s: %v\n", runc, err)
		os.Exit(1)
	}
}

// findRunc returns the real runc: realRunc if set, else the first existing
// realRuncPaths entry that is not this program.
func findRunc() (string, error) {
	if realRunc != "" {
		return realRunc, nil
	}
	self, _ := os.Executable()
	selfInfo, _ := os.Stat(self)
	for _, p := range realRuncPaths {
		info, err := os.Stat(p)
		if err != nil || info.IsDir() {
			continue
		}
		if selfInfo != nil && os.SameFile(info, selfInfo) {
			continue
		}
		return p, nil
	}
	return "", fmt.Errorf("no runc found in %v", realRuncPaths)
}

// globalFlagsWithValue are runc's global flags that take a separate value.
var globalFlagsWithValue = map[string]bool{
	"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true,
}

// filterSpec finds the spec file that args refer to, if any, and removes the
// capabilities this process cannot grant from it.
func filterSpec(args []string) error {
	cmd, rest := subcommand(args)
	var file string
	switch cmd {
	case "create", "run":
		bundle := flagValue(rest, "--bundle", "-b")
		if bundle == "" {
			bundle = "."
		}
		file = filepath.Join(bundle, "config.json")
	case "exec":
		file = flagValue(rest, "--process", "-p")
	}
	if file == "" {
		return nil
	}
	allowed, err := boundingSet()
	if err != nil {
		return err
	}
	return rewrite(file, cmd == "exec", allowed)
}

// subcommand returns runc's subcommand and the arguments after it.
func subcommand(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return a, args[i+1:]
		}
		if globalFlagsWithValue[a] {
			i++
		}
	}
	return "", nil
}

// flagValue returns the value of the first of names in args ("--x v" or
// "--x=v").
func flagValue(args []string, names ...string) string {
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
		}
	}
	return ""
}

// boundingSet returns the names of the capabilities in this process's
// bounding set.
func boundingSet() (map[string]bool, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "CapBnd:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("parse CapBnd %q: %w", v, err)
		}
		set := map[string]bool{}
		for i, name := range capNames {
			if mask&(1<<uint(i)) != 0 {
				set[name] = true
			}
		}
		return set, nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no CapBnd in /proc/self/status")
}

// rewrite filters the capability lists of the spec in file; isProcess says
// that file holds an OCI process (runc exec --process) rather than a whole
// config. Unknown capability names are kept. The file is only rewritten when
// something was removed.
func rewrite(file string, isProcess bool, allowed map[string]bool) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep 64-bit limits exact
	var spec map[string]any
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("decode %s: %w", file, err)
	}
	proc := spec
	if !isProcess {
		p, ok := spec["process"].(map[string]any)
		if !ok {
			return nil
		}
		proc = p
	}
	caps, ok := proc["capabilities"].(map[string]any)
	if !ok {
		return nil
	}
	known := map[string]bool{}
	for _, n := range capNames {
		known[n] = true
	}
	changed := false
	for set, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			name, _ := c.(string)
			if known[name] && !allowed[name] {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		caps[set] = kept
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	return os.WriteFile(file, out, info.Mode().Perm())
}
