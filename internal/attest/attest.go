// Package attest signs a run folder and verifies the signature: an in-toto Statement
// (https://github.com/in-toto/attestation, spec v1) in a DSSE envelope
// (https://github.com/secure-systems-lab/dsse), written as attestation.dsse.json inside
// the run folder.
//
// The Statement's subjects are the run's and each row's SHA256SUMS, the JUnit file and
// each row's bundle; its Predicate states the run id, commit, verdicts and, for a CI
// shard, the ShardClaim. The run's SHA256SUMS lists every other file, so a verified
// signature binds every byte the runner wrote before signing.
//
// What a signature proves: these bytes are what the holder of the key signed, and
// nothing was edited after. What it does not: that the runner was honest. A runner that
// holds the key can sign a forgery; the checker's cross-checks are what catch those.
package attest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	ita "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"qualkit/internal/schema"
)

const (
	// File is the signed attestation, inside the run folder. It is the one file of the
	// folder SHA256SUMS does not list: it signs that list.
	File = "attestation.dsse.json"
	// PayloadType is DSSE's payload type for an in-toto Statement.
	PayloadType = "application/vnd.in-toto+json"
	// PredicateType is qualkit's own predicate: a run's verdicts (Predicate).
	PredicateType = "https://qualkit.dev/attestation/run/v1"
	// KeyEnv holds the signing key: a PEM private key (ed25519 or ECDSA P-256), or the
	// path of a file holding one.
	KeyEnv = "QUALKIT_SIGNING_KEY"

	// JUnitSubject names the run's JUnit file among the subjects (it lives outside the
	// folder: CI's artifact, or shards/<name>/junit.xml in a merged run).
	JUnitSubject = "junit.xml"
	bundlePrefix = "bundle:"
)

// Predicate is what qualkit states about the run it signs.
type Predicate struct {
	RunID         string    `json:"run_id"`
	HarnessCommit string    `json:"harness_commit"`
	HarnessDirty  bool      `json:"harness_dirty"`
	SignedAt      time.Time `json:"signed_at"`
	Rows          []Verdict `json:"rows"`
	// Shard, for a CI shard's run (make shard), names the shard and the matrix entry it
	// answers: a merged run refuses the run in another shard's folder or for another matrix.
	Shard *ShardClaim `json:"shard,omitempty"`
}

// ShardClaim is what a shard's run answers: the shard's name (its folder in the merged
// run), the matrix entry (a row) and when its matrix was made (scripts/matrix's created).
type ShardClaim struct {
	Name          string    `json:"name"`
	MatrixEntry   string    `json:"matrix_entry"`
	MatrixCreated time.Time `json:"matrix_created"`
}

// Verdict is one row as its results.json states it.
type Verdict struct {
	Row        string             `json:"row"`
	Model      string             `json:"model"`
	Profile    string             `json:"profile"`
	Status     string             `json:"status"`
	Reason     string             `json:"reason,omitempty"`
	Bundle     string             `json:"bundle_sha256,omitempty"`
	TimeBudget *schema.TimeBudget `json:"time_budget,omitempty"`
}

// Statement builds the in-toto Statement of the run folder dir; junit, when not empty,
// is the run's JUnit file; shard, when not nil, the shard the run answers.
func Statement(dir, junit string, shard *ShardClaim, now time.Time) (*ita.Statement, error) {
	var info schema.RunInfo
	if err := schema.ReadJSON(filepath.Join(dir, schema.RunFile), &info); err != nil {
		return nil, err
	}
	subjects, err := subjectsOf(dir, info.Rows, junit)
	if err != nil {
		return nil, err
	}
	pred := Predicate{RunID: info.RunID, HarnessCommit: info.HarnessCommit, HarnessDirty: info.HarnessDirty, SignedAt: now.UTC(), Shard: shard}
	for _, row := range info.Rows {
		var res schema.Result
		if err := schema.ReadJSON(filepath.Join(dir, row, "results.json"), &res); err != nil {
			return nil, err
		}
		v := Verdict{Row: row, Model: res.Checkpoint.Model, Profile: res.Checkpoint.Profile, Status: res.Status, Reason: res.Reason, TimeBudget: res.TimeBudget}
		if res.Bundle != nil && res.Bundle.SHA256 != "" {
			v.Bundle = res.Bundle.SHA256
			subjects = append(subjects, &ita.ResourceDescriptor{Name: bundlePrefix + row, Digest: map[string]string{"sha256": res.Bundle.SHA256}})
		}
		pred.Rows = append(pred.Rows, v)
	}
	b, err := json.Marshal(pred)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	ps, err := structpb.NewStruct(m)
	if err != nil {
		return nil, err
	}
	st := &ita.Statement{Type: ita.StatementTypeUri, Subject: subjects, PredicateType: PredicateType, Predicate: ps}
	return st, st.Validate()
}

// subjectsOf digests the run's SHA256SUMS, each row's, and the JUnit file.
func subjectsOf(dir string, rows []string, junit string) ([]*ita.ResourceDescriptor, error) {
	var out []*ita.ResourceDescriptor
	for _, f := range sumLists(rows) {
		sum, err := schema.FileSHA256(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		out = append(out, &ita.ResourceDescriptor{Name: f, Digest: map[string]string{"sha256": sum}})
	}
	if junit != "" {
		sum, err := schema.FileSHA256(junit)
		if err != nil {
			return nil, err
		}
		out = append(out, &ita.ResourceDescriptor{Name: JUnitSubject, Digest: map[string]string{"sha256": sum}})
	}
	return out, nil
}

// sumLists are the run's SHA256SUMS and each row's, the subjects every signature names.
func sumLists(rows []string) []string {
	lists := []string{schema.ChecksumFile}
	for _, row := range rows {
		lists = append(lists, row+"/"+schema.ChecksumFile)
	}
	return lists
}

// LoadKey reads a PEM key (private for signing, public or private for verifying): ed25519
// or ECDSA P-256, PKCS#8 / PKIX as `openssl genpkey` and `openssl pkey -pubout` write them.
func LoadKey(pemBytes []byte) (dsse.SignerVerifier, error) {
	k, err := signerverifier.LoadKey(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("read the key: %w (want a PEM ed25519 or ECDSA P-256 key, e.g. from `go run ./scripts/attest keygen`)", err)
	}
	switch k.KeyType {
	case signerverifier.ED25519KeyType:
		return signerverifier.NewED25519SignerVerifierFromSSLibKey(k)
	case signerverifier.ECDSAKeyType:
		return signerverifier.NewECDSASignerVerifierFromSSLibKey(k)
	}
	return nil, fmt.Errorf("key type %s: want ed25519 or ECDSA", k.KeyType)
}

// KeyFromEnv reads the signing key KeyEnv names: the PEM itself, or a file's path. It
// returns nil, nil when the variable is not set.
func KeyFromEnv() ([]byte, error) {
	v := strings.TrimSpace(os.Getenv(KeyEnv))
	if v == "" {
		return nil, nil
	}
	if strings.HasPrefix(v, "-----BEGIN") {
		return []byte(v + "\n"), nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return nil, fmt.Errorf("%s names a file that cannot be read: %w (give the PEM key or its path)", KeyEnv, err)
	}
	return b, nil
}

// KeyID is the key's id as DSSE records it (sha256 of its public part).
func KeyID(key []byte) (string, error) {
	sv, err := LoadKey(key)
	if err != nil {
		return "", err
	}
	return sv.KeyID()
}

// Sign writes dir/File: the run's Statement signed with the private key.
func Sign(ctx context.Context, dir, junit string, key []byte) (*dsse.Envelope, error) {
	return SignShard(ctx, dir, junit, key, nil)
}

// SignShard is Sign of a shard's run: its Statement names shard too.
func SignShard(ctx context.Context, dir, junit string, key []byte, shard *ShardClaim) (*dsse.Envelope, error) {
	sv, err := LoadKey(key)
	if err != nil {
		return nil, err
	}
	st, err := Statement(dir, junit, shard, time.Now())
	if err != nil {
		return nil, fmt.Errorf("statement of %s: %w", dir, err)
	}
	payload, err := protojson.Marshal(st)
	if err != nil {
		return nil, err
	}
	signer, err := dsse.NewEnvelopeSigner(sv)
	if err != nil {
		return nil, err
	}
	env, err := signer.SignPayload(ctx, PayloadType, payload)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return nil, err
	}
	return env, os.WriteFile(filepath.Join(dir, File), append(b, '\n'), 0o644)
}

// Problem is one way the attestation does not hold; Evidence is what was expected and
// from where, Got what the attestation or the file says.
type Problem struct {
	Claim, Evidence, Got string
}

// Result is what Verify found.
type Result struct {
	Signed      bool   // the folder holds an attestation
	SignatureOK bool   // its signature verified with the given key
	Verified    bool   // and every subject and verdict matched the folder
	KeyID       string // the key id the envelope names
	Predicate   Predicate
	Problems    []Problem
}

// Summary is one line for a reader.
func (r Result) Summary() string {
	switch {
	case !r.Signed:
		return "unsigned (no " + File + ")"
	case r.Verified:
		return "signature verified (key " + shortID(r.KeyID) + ")"
	case r.SignatureOK:
		return "signature valid (key " + shortID(r.KeyID) + "), but the folder is not what was signed"
	case len(r.Problems) > 0:
		return "signature does NOT verify (key " + shortID(r.KeyID) + ")"
	}
	return "signed by key " + shortID(r.KeyID) + ", not verified (give -pubkey)"
}

func shortID(id string) string {
	if len(id) > 16 {
		return id[:16]
	}
	if id == "" {
		return "unnamed"
	}
	return id
}

// Inspect reads dir's attestation without a key: whether there is one, and its key id.
func Inspect(dir string) Result {
	r, _ := inspect(dir)
	return r
}

// inspect is Inspect with the envelope it read (nil when there is none to verify).
func inspect(dir string) (Result, *dsse.Envelope) {
	env, err := readEnvelope(dir)
	if errors.Is(err, os.ErrNotExist) {
		return Result{}, nil
	}
	r := Result{Signed: true}
	if err != nil {
		r.fail("envelope", "a DSSE envelope (JSON)", err.Error())
		return r, nil
	}
	if len(env.Signatures) > 0 {
		r.KeyID = env.Signatures[0].KeyID
	}
	return r, env
}

func (r *Result) fail(claim, evidence, got string) {
	r.Problems = append(r.Problems, Problem{claim, evidence, got})
}

// Verify checks dir's attestation with the public key pub: the signature, every
// subject's digest against its file (junit, when not empty), each bundle and verdict
// against results.json, the folder's name against the run id, and that every row of
// run.json is a subject.
func Verify(ctx context.Context, dir, junit string, pub []byte) Result {
	r, env := inspect(dir)
	if env == nil {
		return r
	}
	fail := r.fail
	v, err := LoadKey(pub)
	if err != nil {
		fail("public key", "a PEM public key (-pubkey)", err.Error())
		return r
	}
	wantID, _ := v.KeyID()
	ev, err := dsse.NewEnvelopeVerifier(v)
	if err == nil {
		_, err = ev.Verify(ctx, env)
	}
	if err != nil {
		fail("signature", "a signature by key "+shortID(wantID)+" (-pubkey) over the payload", "none verifies ("+err.Error()+"; envelope names key "+shortID(r.KeyID)+")")
		return r
	}
	r.SignatureOK = true
	if env.PayloadType != PayloadType {
		fail("payloadType", PayloadType, env.PayloadType)
		return r
	}
	st, pred, err := statementOf(env)
	if err != nil {
		fail("statement", "an in-toto Statement v1 of qualkit's run predicate ("+PredicateType+")", err.Error())
		return r
	}
	r.Predicate = pred
	n := len(r.Problems)
	// The folder is named after its run (evidence/<run id>, shards/<name>/<run id>): an
	// old signed run copied under a new name is not a new run.
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	if name := filepath.Base(real); name != r.Predicate.RunID {
		fail("run folder", "named after the signed run id "+r.Predicate.RunID, name+" (a signed run under another folder name)")
	}
	r.checkSubjects(dir, junit, st.GetSubject())
	r.checkVerdicts(dir)
	r.Verified = len(r.Problems) == n
	return r
}

func (r *Result) checkSubjects(dir, junit string, subjects []*ita.ResourceDescriptor) {
	fail := r.fail
	var info schema.RunInfo
	if err := schema.ReadJSON(filepath.Join(dir, schema.RunFile), &info); err != nil {
		fail("run.json", "readable", err.Error())
		return
	}
	named := map[string]string{}
	for _, s := range subjects {
		named[s.GetName()] = s.GetDigest()["sha256"]
	}
	want := sumLists(info.Rows)
	for _, f := range want {
		if _, ok := named[f]; !ok {
			fail("subject "+f, "a subject (a row of run.json, or the run's list)", "not signed")
		}
	}
	sha := func(p string) string {
		got, err := schema.FileSHA256(p)
		if err != nil {
			return err.Error()
		}
		return got
	}
	for _, s := range subjects {
		name, digest := s.GetName(), s.GetDigest()["sha256"]
		var got, where string
		switch {
		case name == JUnitSubject:
			if junit == "" {
				continue // the JUnit file lives apart; checked when given
			}
			got, where = sha(junit), junit
		case strings.HasPrefix(name, bundlePrefix):
			row := strings.TrimPrefix(name, bundlePrefix)
			var res schema.Result
			got, where = "no bundle recorded", row+"/results.json bundle.sha256"
			if err := schema.ReadJSON(filepath.Join(dir, row, "results.json"), &res); err != nil {
				got = err.Error()
			} else if res.Bundle != nil {
				got = res.Bundle.SHA256
			}
		case !slices.Contains(want, name):
			fail("subject "+name, "the run's or a run.json row's SHA256SUMS", "an unknown subject")
			continue
		default:
			got, where = sha(filepath.Join(dir, filepath.FromSlash(name))), "the file was changed after signing"
		}
		if got != digest {
			fail("subject "+name, "sha256 "+digest+" (signed)", got+" ("+where+")")
		}
	}
}

func (r *Result) checkVerdicts(dir string) {
	fail := r.fail
	for _, v := range r.Predicate.Rows {
		var res schema.Result
		if err := schema.ReadJSON(filepath.Join(dir, v.Row, "results.json"), &res); err != nil {
			fail("verdict of "+v.Row, v.Status+" (signed)", err.Error())
			continue
		}
		if res.Status != v.Status || res.Reason != v.Reason {
			fail("verdict of "+v.Row, v.Status+" "+v.Reason+" (signed)", res.Status+" "+res.Reason+" ("+v.Row+"/results.json)")
		}
	}
}

// statementOf decodes the envelope's in-toto Statement of qualkit's predicate.
func statementOf(env *dsse.Envelope) (*ita.Statement, Predicate, error) {
	var st ita.Statement
	var p Predicate
	payload, err := env.DecodeB64Payload()
	if env.PayloadType != PayloadType {
		err = fmt.Errorf("payloadType %s, want %s", env.PayloadType, PayloadType)
	}
	if err == nil {
		err = protojson.Unmarshal(payload, &st)
	}
	if err == nil {
		err = st.Validate()
	}
	if err == nil && st.GetPredicateType() != PredicateType {
		err = fmt.Errorf("predicateType %s", st.GetPredicateType())
	}
	var b []byte
	if err == nil {
		b, err = protojson.Marshal(st.GetPredicate())
	}
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	return &st, p, err
}

// Claimed is the shard dir's Statement names, as its envelope carries it, without
// checking the signature (Verify does): nil when the folder is unsigned or names none.
func Claimed(dir string) (*ShardClaim, error) {
	env, err := readEnvelope(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	_, p, err := statementOf(env)
	return p.Shard, err
}

func readEnvelope(dir string) (*dsse.Envelope, error) {
	var env dsse.Envelope
	return &env, schema.ReadJSON(filepath.Join(dir, File), &env)
}
