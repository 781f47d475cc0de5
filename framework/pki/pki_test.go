package pki

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMutualTLS checks that issued identities complete a real mutual TLS
// handshake on loopback, and that a foreign CA's certificate is refused.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewAuthority(0)
	require.NoError(t, err)
	_, err = ca.WriteCA(dir)
	require.NoError(t, err)
	server, err := ca.Issue("backend", dir)
	require.NoError(t, err)
	client, err := ca.Issue("loadgen", dir)
	require.NoError(t, err)
	assert.Equal(t, "backend.meshbench.local", server.ServerName())

	srvCert, err := tls.LoadX509KeyPair(server.CertFile, server.KeyFile)
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{srvCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(),
	})
	require.NoError(t, err)
	defer ln.Close()
	peers := make(chan string, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := c.(*tls.Conn)
			if tc.Handshake() == nil {
				peers <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
			} else {
				peers <- ""
			}
			c.Close()
		}
	}()

	dial := func(id Identity, roots *x509.CertPool) error {
		cert, err := tls.X509KeyPair(id.CertPEM, id.KeyPEM)
		require.NoError(t, err)
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: server.ServerName()})
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Handshake()
	}
	require.NoError(t, dial(client, ca.Pool()))
	assert.Equal(t, "loadgen", <-peers, "the server verified the client's identity")

	other, err := NewAuthority(0)
	require.NoError(t, err)
	stranger, err := other.Issue("stranger", t.TempDir())
	require.NoError(t, err)
	_ = dial(stranger, ca.Pool())
	assert.Equal(t, "", <-peers, "a certificate from another CA is refused")
}
