package attest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/runarchive/runstest"
)

// committedRun copies the checker's committed qualified run (a real refedit row).
func committedRun(t *testing.T) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(runstest.Shared(t, runstest.TestdataArchive), "*-qualified"))
	require.NoError(t, err)
	require.Len(t, m, 1)
	dir := filepath.Join(t.TempDir(), filepath.Base(m[0]))
	require.NoError(t, os.CopyFS(dir, os.DirFS(m[0])))
	return dir
}

func pemOf(t *testing.T, typ string, der []byte, err error) []byte {
	t.Helper()
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func TestSignAndVerifyEachKeyType(t *testing.T) {
	ed, edPub, err := GenerateKey()
	require.NoError(t, err)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	p8, err := x509.MarshalPKCS8PrivateKey(ec)
	ecPriv := pemOf(t, "PRIVATE KEY", p8, err)
	pk, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	ecPub := pemOf(t, "PUBLIC KEY", pk, err)
	for name, k := range map[string][2][]byte{"ed25519": {ed, edPub}, "ecdsa-p256": {ecPriv, ecPub}} {
		t.Run(name, func(t *testing.T) {
			dir := committedRun(t)
			assert.False(t, Inspect(dir).Signed)
			assert.Equal(t, "unsigned (no attestation.dsse.json)", Inspect(dir).Summary())
			env, err := Sign(context.Background(), dir, "", k[0])
			require.NoError(t, err)
			assert.Equal(t, PayloadType, env.PayloadType)
			res := Verify(context.Background(), dir, "", k[1])
			require.Empty(t, res.Problems)
			assert.True(t, res.Verified)
			want, err := KeyID(k[1])
			require.NoError(t, err)
			assert.Equal(t, want, res.KeyID, "the envelope names the key")
			require.Len(t, res.Predicate.Rows, 1)
			assert.Equal(t, "qualkit/refedit-v1", res.Predicate.Rows[0].Model)
			assert.NotEmpty(t, res.Predicate.Rows[0].Bundle)
		})
	}
}

func TestKeysRefused(t *testing.T) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	p8, err := x509.MarshalPKCS8PrivateKey(rk)
	rsaPEM := pemOf(t, "PRIVATE KEY", p8, err)
	for name, key := range map[string][]byte{
		"not PEM": []byte("hunter2"),
		"RSA":     rsaPEM,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Sign(context.Background(), committedRun(t), "", key)
			require.Error(t, err)
		})
	}
	// A public key cannot sign.
	_, pub, err := GenerateKey()
	require.NoError(t, err)
	_, err = Sign(context.Background(), committedRun(t), "", pub)
	require.Error(t, err)
}

func TestKeyFromEnv(t *testing.T) {
	priv, _, err := GenerateKey()
	require.NoError(t, err)
	t.Setenv(KeyEnv, "")
	b, err := KeyFromEnv()
	require.NoError(t, err)
	assert.Nil(t, b, "unset: no key, no error")

	t.Setenv(KeyEnv, string(priv))
	b, err = KeyFromEnv()
	require.NoError(t, err)
	_, err = LoadKey(b)
	require.NoError(t, err, "the PEM itself")

	p := filepath.Join(t.TempDir(), "ci.pem")
	require.NoError(t, os.WriteFile(p, priv, 0o600))
	t.Setenv(KeyEnv, p)
	b, err = KeyFromEnv()
	require.NoError(t, err)
	assert.Equal(t, priv, b, "a file's path")

	t.Setenv(KeyEnv, filepath.Join(t.TempDir(), "missing.pem"))
	_, err = KeyFromEnv()
	require.ErrorContains(t, err, KeyEnv+" names a file that cannot be read")
}

// A verdict edited in results.json after signing is named, beside the changed lists.
func TestVerdictAgainstResults(t *testing.T) {
	priv, pub, err := GenerateKey()
	require.NoError(t, err)
	dir := committedRun(t)
	_, err = Sign(context.Background(), dir, "", priv)
	require.NoError(t, err)
	p := filepath.Join(dir, "refedit-v1", "results.json")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), `"status": "qualified"`, `"status": "smoke-passed"`, 1)), 0o644))
	res := Verify(context.Background(), dir, "", pub)
	assert.False(t, res.Verified)
	assert.True(t, res.SignatureOK)
	assert.Contains(t, res.Summary(), "but the folder is not what was signed")
	assert.Contains(t, res.Problems, Problem{"verdict of refedit-v1", "qualified  (signed)", "smoke-passed  (refedit-v1/results.json)"})
}
