// Package pki makes the short-lived certificate authority and workload
// certificates that meshbench's sidecars use for mutual TLS. Everything is
// generated at run time, in memory, and written only into the run's own
// directory: no key outlives the run.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Domain is the DNS suffix of every workload identity, e.g. "backend.meshbench.local".
const Domain = "meshbench.local"

// Authority is a run-scoped certificate authority.
type Authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

// Identity is one workload's certificate and key, PEM encoded, with the file
// paths they were written to.
type Identity struct {
	// Name is the workload name; the certificate's CN and its DNS SAN
	// "<Name>.meshbench.local".
	Name string
	// CertPEM is the certificate, PEM.
	CertPEM []byte
	// KeyPEM is its private key, PEM.
	KeyPEM []byte
	// CertFile is the path CertPEM was written to, "<dir>/<Name>.pem".
	CertFile string
	// KeyFile is the path KeyPEM was written to, "<dir>/<Name>-key.pem".
	KeyFile string
	// BundleFile holds the certificate followed by the key, for proxies
	// that take both in one file (haproxy).
	BundleFile string
}

// ServerName is the TLS server name that a peer must ask for.
func (id Identity) ServerName() string { return id.Name + "." + Domain }

// NewAuthority creates a CA valid for lifetime (24h when zero).
func NewAuthority(lifetime time.Duration) (*Authority, error) {
	if lifetime <= 0 {
		lifetime = 24 * time.Hour
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := caTemplate(pkix.Name{CommonName: "meshbench run CA", Organization: []string{"meshbench"}}, time.Now(), lifetime, 0)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA: %w", err)
	}
	return &Authority{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// CertPEM is the CA certificate, PEM encoded.
func (a *Authority) CertPEM() []byte { return a.certPEM }

// Pool is a cert pool holding only this CA.
func (a *Authority) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.cert)
	return p
}

// WriteCA writes the CA certificate to dir/ca.pem and returns the path.
func (a *Authority) WriteCA(dir string) (string, error) {
	path := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(path, a.certPEM, 0o600); err != nil {
		return "", fmt.Errorf("write CA certificate: %w", err)
	}
	return path, nil
}

// Issue makes a certificate for workload name, usable both as a TLS server
// (SANs: name.meshbench.local, 127.0.0.1, ::1) and as a TLS client, and
// writes it to dir/<name>.pem and dir/<name>-key.pem.
func (a *Authority) Issue(name, dir string) (Identity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Identity{}, fmt.Errorf("generate key for %s: %w", name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"meshbench"}},
		DNSNames:     []string{name + "." + Domain},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     a.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return Identity{}, fmt.Errorf("sign certificate for %s: %w", name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Identity{}, fmt.Errorf("encode key for %s: %w", name, err)
	}
	id := Identity{
		Name:       name,
		CertPEM:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:     pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		CertFile:   filepath.Join(dir, name+".pem"),
		KeyFile:    filepath.Join(dir, name+"-key.pem"),
		BundleFile: filepath.Join(dir, name+"-bundle.pem"),
	}
	if err := os.WriteFile(id.CertFile, id.CertPEM, 0o600); err != nil {
		return Identity{}, fmt.Errorf("write certificate for %s: %w", name, err)
	}
	if err := os.WriteFile(id.KeyFile, id.KeyPEM, 0o600); err != nil {
		return Identity{}, fmt.Errorf("write key for %s: %w", name, err)
	}
	if err := os.WriteFile(id.BundleFile, append(append([]byte{}, id.CertPEM...), id.KeyPEM...), 0o600); err != nil {
		return Identity{}, fmt.Errorf("write bundle for %s: %w", name, err)
	}
	return id, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand never fails on Linux; a fixed serial is still valid.
		return big.NewInt(1)
	}
	return n
}

// Chain is a root certificate and an intermediate issuer signed by it, for
// meshes that run their own identity service and take an issuer on install
// (Linkerd's trust anchor and identity issuer). Keys are ECDSA P-256, the
// issuer's PEM encoded as "EC PRIVATE KEY".
type Chain struct {
	// RootPEM is the root certificate, PEM.
	RootPEM []byte
	// IssuerPEM is the issuer's certificate, signed by the root, PEM.
	IssuerPEM []byte
	// IssuerKeyPEM is the issuer's private key, PEM ("EC PRIVATE KEY").
	IssuerKeyPEM []byte
}

// NewChain makes a root named rootCN and an issuer named issuerCN, both
// valid for lifetime (24h when zero), the issuer allowed to sign workload
// certificates only.
func NewChain(rootCN, issuerCN string, lifetime time.Duration) (Chain, error) {
	if lifetime <= 0 {
		lifetime = 24 * time.Hour
	}
	now := time.Now()
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Chain{}, fmt.Errorf("generate root key: %w", err)
	}
	root := caTemplate(pkix.Name{CommonName: rootCN}, now, lifetime, 1)
	rootDER, err := x509.CreateCertificate(rand.Reader, root, root, &rootKey.PublicKey, rootKey)
	if err != nil {
		return Chain{}, fmt.Errorf("self-sign root %s: %w", rootCN, err)
	}
	issuerKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Chain{}, fmt.Errorf("generate issuer key: %w", err)
	}
	issuer := caTemplate(pkix.Name{CommonName: issuerCN}, now, lifetime, 0)
	issuerDER, err := x509.CreateCertificate(rand.Reader, issuer, root, &issuerKey.PublicKey, rootKey)
	if err != nil {
		return Chain{}, fmt.Errorf("sign issuer %s: %w", issuerCN, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(issuerKey)
	if err != nil {
		return Chain{}, fmt.Errorf("encode issuer key: %w", err)
	}
	return Chain{
		RootPEM:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER}),
		IssuerPEM:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: issuerDER}),
		IssuerKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// caTemplate is a CA certificate for subject, valid from a minute before
// now for lifetime, that may sign maxPath more CAs below it (0: leaves only).
func caTemplate(subject pkix.Name, now time.Time, lifetime time.Duration, maxPath int) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               subject,
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            maxPath,
		MaxPathLenZero:        maxPath == 0,
	}
}
