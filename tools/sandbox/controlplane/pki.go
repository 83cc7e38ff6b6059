// Package controlplane generates the certificates and kubeconfigs of the sandbox cluster and
// describes the etcd, kube-apiserver, kube-controller-manager and kube-scheduler processes that
// run it on loopback.
package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
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

// PKI holds the paths of every certificate and key the sandbox uses, and of the API server's
// audit policy. All live in one directory.
type PKI struct {
	Dir string
}

// Paths inside the PKI directory.
func (p PKI) CACert() string          { return filepath.Join(p.Dir, "ca.crt") }
func (p PKI) CAKey() string           { return filepath.Join(p.Dir, "ca.key") }
func (p PKI) ServingCert() string     { return filepath.Join(p.Dir, "apiserver.crt") }
func (p PKI) ServingKey() string      { return filepath.Join(p.Dir, "apiserver.key") }
func (p PKI) AdminCert() string       { return filepath.Join(p.Dir, "admin.crt") }
func (p PKI) AdminKey() string        { return filepath.Join(p.Dir, "admin.key") }
func (p PKI) SAKey() string           { return filepath.Join(p.Dir, "sa.key") }
func (p PKI) SAPub() string           { return filepath.Join(p.Dir, "sa.pub") }
func (p PKI) WebhookDir() string      { return filepath.Join(p.Dir, "webhook") }
func (p PKI) WebhookCACert() string   { return filepath.Join(p.Dir, "webhook-ca.crt") }
func (p PKI) WebhookCert() string     { return filepath.Join(p.WebhookDir(), "tls.crt") }
func (p PKI) WebhookKey() string      { return filepath.Join(p.WebhookDir(), "tls.key") }
func (p PKI) AdminKubeconfig() string { return filepath.Join(filepath.Dir(p.Dir), "kubeconfig") }
func (p PKI) AuditPolicy() string     { return filepath.Join(p.Dir, "audit-policy.yaml") }

type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Generate writes a fresh cluster CA, the apiserver serving certificate, an admin client
// certificate (system:masters), the service-account signing key, and a separate webhook CA with
// a serving certificate for 127.0.0.1; and the API server's audit policy for the ServiceAccounts
// of OperatorNamespace.
func (p PKI) Generate() error {
	if err := os.MkdirAll(p.WebhookDir(), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(p.AuditPolicy(), AuditPolicy(OperatorNamespace), 0o600); err != nil {
		return err
	}
	ca, err := newCA("dgdr-sandbox-ca")
	if err != nil {
		return err
	}
	if err := writePair(ca, p.CACert(), p.CAKey()); err != nil {
		return err
	}
	serving, err := ca.issue(pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")})
	if err != nil {
		return err
	}
	if err := writePair(serving, p.ServingCert(), p.ServingKey()); err != nil {
		return err
	}
	admin, err := ca.issue(pkix.Name{CommonName: "sandbox-admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return err
	}
	if err := writePair(admin, p.AdminCert(), p.AdminKey()); err != nil {
		return err
	}
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writePEM(p.SAKey(), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa), 0o600); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(p.SAPub(), "PUBLIC KEY", pub, 0o644); err != nil {
		return err
	}
	wca, err := newCA("dgdr-sandbox-webhook-ca")
	if err != nil {
		return err
	}
	if err := writePEM(p.WebhookCACert(), "CERTIFICATE", wca.cert.Raw, 0o644); err != nil {
		return err
	}
	wh, err := wca.issue(pkix.Name{CommonName: "dgdr-operator-webhook"}, x509.ExtKeyUsageServerAuth,
		[]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		return err
	}
	return writePair(wh, p.WebhookCert(), p.WebhookKey())
}

func newCA(cn string) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key}, nil
}

func (ca *keyPair) issue(subject pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func writePair(kp *keyPair, certPath, keyPath string) error {
	if err := writePEM(certPath, "CERTIFICATE", kp.cert.Raw, 0o644); err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(kp.key)
	if err != nil {
		return err
	}
	return writePEM(keyPath, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
