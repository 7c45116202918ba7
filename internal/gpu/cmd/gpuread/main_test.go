package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/gpu"
)

// Runs on any host: without a driver run must fail with ErrNoDriver and
// print nothing; with one it must print a reading that loads back.
func TestRunPrintsReadingOrFailsCleanly(t *testing.T) {
	var out bytes.Buffer

	err := run(&out)

	if err != nil {
		require.True(t, errors.Is(err, gpu.ErrNoDriver) || errors.Is(err, gpu.ErrDriverNotLoaded), "%v", err)
		assert.Contains(t, err.Error(), "libnvidia-ml.so.1")
		assert.Empty(t, out.String(), "nothing on stdout when there is no reading")
		return
	}
	_, err = gpu.ParseReading(out.Bytes())
	require.NoError(t, err, out.String())
}
