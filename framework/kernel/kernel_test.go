package kernel

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeKernelConfig(t *testing.T, lines string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write([]byte(lines))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	p := filepath.Join(t.TempDir(), "config.gz")
	require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
	return p
}

// The kernel of our CI machines: the XFRM framework without the ESP
// transform, no GCM, no modules, no WireGuard.
const ciKernel = "CONFIG_XFRM=y\nCONFIG_XFRM_USER=y\n# CONFIG_INET_ESP is not set\n# CONFIG_CRYPTO_GCM is not set\n" +
	"# CONFIG_CRYPTO_AUTHENC is not set\n# CONFIG_MODULES is not set\n# CONFIG_WIREGUARD is not set\n"

func TestSupports(t *testing.T) {
	path := writeKernelConfig(t, ciKernel)
	assert.EqualError(t, Supports(path, "ipsec"), "the kernel ("+path+") lacks CONFIG_INET_ESP, CONFIG_CRYPTO_GCM or CONFIG_CRYPTO_AUTHENC, "+
		"so ipsec cannot run on its nodes")
	assert.EqualError(t, Supports(path, "wireguard"), "the kernel ("+path+") lacks CONFIG_WIREGUARD, "+
		"so wireguard cannot run on its nodes")
	assert.NoError(t, Supports(path, "none"))

	path = writeKernelConfig(t, "CONFIG_INET_ESP=y\nCONFIG_CRYPTO_GCM=y\nCONFIG_MODULES=y\nCONFIG_WIREGUARD=m\n")
	assert.NoError(t, Supports(path, "ipsec"))
	assert.NoError(t, Supports(path, "wireguard"), "a module, where modules load")

	path = writeKernelConfig(t, "CONFIG_INET_ESP=m\nCONFIG_CRYPTO_AUTHENC=m\n# CONFIG_MODULES is not set\n")
	assert.Error(t, Supports(path, "ipsec"), "a module is no use without module loading")

	path = filepath.Join(t.TempDir(), "absent.gz")
	assert.NoError(t, Supports(path, "ipsec"), "a kernel that does not publish its config is not refused")
}
