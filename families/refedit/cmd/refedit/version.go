package main

import (
	"fmt"
	"io"
	"runtime"

	"qualkit/families/refedit/edit"
)

func cmdVersion(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usagef("version", "takes no arguments, got %q", args)
	}
	fmt.Fprintf(stdout, "refedit %s (bundle format %s v%d, %s, %s/%s)\n",
		edit.Version, edit.Format, edit.FormatVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
