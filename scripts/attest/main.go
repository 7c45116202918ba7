// Command attest signs a run folder, after the checker accepts it, and makes signing keys.
//
//	go run ./scripts/attest keygen [-out PREFIX]      (writes PREFIX.pem and PREFIX.pub.pem; default ~/.config/qualkit/ci)
//	go run ./scripts/attest sign -dir evidence/latest -junit evidence/junit-qual.xml -key ci.pem
//	go run ./scripts/attest sign -dir evidence/latest -shard refedit-v1 -matrix-created 2026-12-06T04:30:00Z   (make shard)
//
// sign writes <dir>/attestation.dsse.json (internal/attest); the key may come from
// QUALKIT_SIGNING_KEY. Verify with `go run ./scripts/checkevidence -dir DIR -pubkey ci.pub.pem`.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	_ "qualkit/families/all" // the families' evidence rules
	"qualkit/internal/attest"
	"qualkit/internal/evidencecheck"
	"qualkit/internal/evidencerepo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = "usage: attest keygen [-out PREFIX] | attest sign -dir RUN [-junit FILE] [-key FILE] (or " + attest.KeyEnv + ") [-shard NAME -matrix-created TIME [-matrix-entry ROW]]"

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[0] {
	case "keygen":
		return keygen(args[1:], stdout, stderr)
	case "sign":
		return sign(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "attest: unknown command %q\n%s\n", args[0], usage)
	return 2
}

// defaultKeyPrefix is where keygen writes without -out: the user's qualkit config
// folder ($XDG_CONFIG_HOME/qualkit/ci, else ~/.config/qualkit/ci), outside any clone.
func defaultKeyPrefix() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "qualkit", "ci")
}

func keygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("attest keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", defaultKeyPrefix(), "PREFIX: writes PREFIX.pem (private, mode 0600) and PREFIX.pub.pem; never inside a git work tree")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" {
		fmt.Fprintln(stderr, "attest keygen: -out PREFIX is required (no home folder for the default)")
		return 2
	}
	if top := evidencerepo.WorkTree(*out + ".pem"); top != "" {
		fmt.Fprintf(stderr, "attest keygen: %s.pem would be inside the git work tree %s: a private key there is one `git add` from being published, and makes every run of the tree dirty; give -out outside it (default %s)\n", *out, top, defaultKeyPrefix())
		return 2
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o700); err != nil {
		fmt.Fprintln(stderr, "attest keygen:", err)
		return 1
	}
	for _, p := range []string{*out + ".pem", *out + ".pub.pem"} {
		if _, err := os.Stat(p); err == nil {
			fmt.Fprintf(stderr, "attest keygen: %s exists: give another -out (a key is never overwritten)\n", p)
			return 1
		}
	}
	priv, pub, err := attest.GenerateKey()
	if err == nil {
		err = os.WriteFile(*out+".pem", priv, 0o600)
	}
	if err == nil {
		err = os.WriteFile(*out+".pub.pem", pub, 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, "attest keygen:", err)
		return 1
	}
	id, _ := attest.KeyID(pub)
	fmt.Fprintf(stdout, "attest: key %s: %s.pem (the secret: CI holds it as %s) and %s.pub.pem (for -pubkey)\n", id, *out, attest.KeyEnv, *out)
	return 0
}

func sign(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("attest sign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the run folder to sign (evidence/latest works)")
	junit := fs.String("junit", "", "the run's JUnit file, signed as a subject; optional")
	keyFile := fs.String("key", "", "PEM private key; default: "+attest.KeyEnv+" (the PEM or its path)")
	shard := fs.String("shard", "", "the shard's name, for a CI shard's run (make shard SHARD=)")
	entry := fs.String("matrix-entry", "", "the matrix entry (row) the shard answers; default -shard")
	created := fs.String("matrix-created", "", "with -shard: the matrix's created time (RFC 3339), as its entry's command gives it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var claim *attest.ShardClaim
	if *shard != "" {
		t, err := time.Parse(time.RFC3339, *created)
		if err != nil {
			fmt.Fprintf(stderr, "attest sign: -shard needs -matrix-created, the created time of the matrix the shard answers (RFC 3339; the matrix entry's command gives make shard MATRIX_CREATED=): %v\n", err)
			return 2
		}
		claim = &attest.ShardClaim{Name: *shard, MatrixEntry: cmp.Or(*entry, *shard), MatrixCreated: t.UTC()}
	}
	if *dir == "" {
		fmt.Fprintln(stderr, "attest sign: -dir RUN is required")
		return 2
	}
	key, err := attest.KeyFromEnv()
	if *keyFile != "" {
		key, err = os.ReadFile(*keyFile)
	}
	if err == nil && key == nil {
		err = errors.New("no key: give -key FILE or set " + attest.KeyEnv + " (make one with: go run ./scripts/attest keygen)")
	}
	if err != nil {
		fmt.Fprintln(stderr, "attest sign:", err)
		return 2
	}
	if resolved, err := filepath.EvalSymlinks(*dir); err == nil {
		*dir = resolved
	}
	if evidencecheck.IsMerged(*dir) {
		fmt.Fprintln(stderr, "attest sign: "+*dir+" is a merged run: sign each shard's run when it is made (make shard SIGN_KEY=...); checking the merged run verifies every shard's signature")
		return 2
	}
	rep := evidencecheck.Verify(*dir, *junit)
	if err := rep.Err(); err != nil {
		fmt.Fprintf(stderr, "attest sign: %s does not check, so it is not signed:\n%v\n", *dir, err)
		return 1
	}
	env, err := attest.SignShard(context.Background(), *dir, *junit, key, claim)
	if err != nil {
		fmt.Fprintln(stderr, "attest sign:", err)
		return 1
	}
	fmt.Fprintf(stdout, "attest: signed %s with key %s: %s\n", *dir, env.Signatures[0].KeyID, filepath.Join(*dir, attest.File))
	return 0
}
