// Package kernel reads the running kernel's build configuration, to check
// before any cluster is made that kind's nodes, which share this kernel,
// can run what a mesh needs.
package kernel

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
)

// ConfigPath is where the running kernel publishes its build
// configuration.
const ConfigPath = "/proc/config.gz"

// Supports checks, before any cluster is made, that this machine's
// kernel, which kind's nodes share, has what a transparent encryption
// needs: for IPsec the ESP transform and an AEAD or authenc cipher, for
// WireGuard its module. It reads the kernel's build configuration at path
// (ConfigPath); a kernel that does not publish it is given the benefit of
// the doubt.
func Supports(path, encryption string) error {
	var need [][]string // each: any one of these options
	switch encryption {
	case "ipsec":
		need = [][]string{{"CONFIG_INET_ESP"}, {"CONFIG_CRYPTO_GCM", "CONFIG_CRYPTO_AUTHENC"}}
	case "wireguard":
		need = [][]string{{"CONFIG_WIREGUARD"}}
	default:
		return nil
	}
	cfg, err := readConfig(path)
	if err != nil {
		return nil
	}
	var missing []string
	for _, anyOf := range need {
		ok := false
		for _, opt := range anyOf {
			v := cfg[opt]
			ok = ok || v == "y" || v == "m" && cfg["CONFIG_MODULES"] == "y"
		}
		if !ok {
			missing = append(missing, strings.Join(anyOf, " or "))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the kernel (%s) lacks %s, so %s cannot run on its nodes",
			path, strings.Join(missing, ", "), encryption)
	}
	return nil
}

// readConfig reads a gzipped kernel config into option → value
// ("y", "m", …); options "is not set" are absent.
func readConfig(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "CONFIG_") {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out, nil
}
