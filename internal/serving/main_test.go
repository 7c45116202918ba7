package serving_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"qualkit/internal/serving"
	"qualkit/internal/serving/reaper"
)

// portsChild makes the test binary a second process that hands out ports
// (TestFreePortNeverTwice): it prints n of FreePort's ports and holds them until its
// stdin closes.
const portsChild = "QUALKIT_TEST_PORTS_CHILD"

func claimPorts(n int) int {
	for range n {
		port, err := serving.FreePort()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(port)
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// FreePort never hands out a port twice, in one process or beside another that also hands
// them out: the kernel offers a just-closed port again within a few hundred listens
// (measured: the first repeat at the 88th and the 268th of 3,000), and two sets of 500 of
// its ~28,000 would share about 9.
func TestFreePortNeverTwice(t *testing.T) {
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), portsChild+"=500")
	in, err := child.StdinPipe()
	require.NoError(t, err)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	defer child.Wait()
	defer in.Close()
	theirs := map[int]bool{}
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "held" {
		port, err := strconv.Atoi(lines.Text())
		require.NoError(t, err)
		theirs[port] = true
	}
	require.Len(t, theirs, 500)

	mine := map[int]bool{}
	for range 1000 {
		port, err := serving.FreePort()
		require.NoError(t, err)
		require.False(t, mine[port], "port %d handed out twice", port)
		require.False(t, theirs[port], "port %d handed out here and by the other process", port)
		mine[port] = true
	}
}

// TestMain gives the package's tests a reaper, as qual's runs have one: what a killed or
// timed-out test binary leaves (its containers, images, processes) goes with it, and the
// build steps its images shared go once no other session is alive.
func TestMain(m *testing.M) {
	if n, _ := strconv.Atoi(os.Getenv(portsChild)); n > 0 {
		os.Exit(claimPorts(n))
	}
	if reaper.Requested() {
		os.Exit(reaper.Main())
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "serving tests:", err)
		os.Exit(2)
	}
	r, err := reaper.Start(exe)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serving tests:", err)
		os.Exit(2)
	}
	code := m.Run()
	if err := r.Close(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "serving tests: the session's end:", err)
		code = 1
	}
	os.Exit(code)
}
