// Command junitfix rewrites, in place, a JUnit file gotestsum wrote, so that CI and
// reviewers read it right and it is valid against junit-10.xsd (internal/junitfix: one
// failure per failed row, on its stage, with the reason; the stages not run listed; times
// that add up; test case properties on the suite). The make targets run it after gotestsum.
//
//	go run ./scripts/junitfix -junit evidence/junit-qual.xml
package main

import (
	"flag"
	"fmt"
	"os"

	"qualkit/internal/junitfix"
)

func main() {
	junit := flag.String("junit", "", "the JUnit file to rewrite in place")
	flag.Parse()
	if *junit == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "junitfix: -junit FILE is required")
		os.Exit(2)
	}
	b, err := os.ReadFile(*junit)
	if err == nil {
		b, err = junitfix.Fix(b)
	}
	if err == nil {
		err = os.WriteFile(*junit, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "junitfix:", err)
		os.Exit(1)
	}
}
