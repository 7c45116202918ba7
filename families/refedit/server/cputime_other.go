//go:build !linux

package server

import "time"

// threadCPU is not read outside Linux: task_cpu_ms is then 0.
func threadCPU() time.Duration { return 0 }
