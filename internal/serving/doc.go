// Package serving runs the programs of a row: servers that answer HTTP until stopped, and
// jobs that run to completion (a build, a correctness case, a native Task), each as a
// local process group or in a container of a locally present image, through one entry
// point each (Start, Run) whose options choose the runtime.
//
// Containers run through the local Docker engine with testcontainers-go (its lifecycle,
// log streaming and HTTP wait strategy), with host networking (servers such as TRTMC bind
// loopback only), GPUs pinned by UUID, and labels that name the session (the process,
// Owner) that made them. No registry is ever contacted: images are built here or must
// already be present, and testcontainers' reaper (Ryuk) must be disabled, so every path
// removes what it created itself; what a killed process left, its own reaper removes
// (package reaper: RemoveSession, KillGroups, KillSession), or a later run's sweep
// (SweepLeftovers). Nothing removes what a live session owns, nor an image's parents
// while any session may build on them (SweepShared). Commands name host paths; in a container they are
// mapped to the container's view (the mounts, and the paths an image bakes in).
//
// It knows nothing of rows, stages or the evidence layout: it writes the log file it is
// given and hands each command's record to the Recorder it is given.
package serving
