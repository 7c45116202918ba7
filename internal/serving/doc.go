// Package serving runs a row's programs: servers that answer HTTP until stopped (Start)
// and jobs that run to completion (Run), as a local process group or in a container of a
// locally present image (InContainer).
//
// Containers run through the local Docker engine with testcontainers-go, on the host
// network (servers such as TRTMC bind loopback only), GPUs pinned by UUID, labelled with
// the session (Owner) that made them. No registry is contacted and Ryuk is off: every
// path removes what it created; what a killed process left, its reaper removes (package
// reaper), or a later run's sweep (SweepLeftovers). Nothing removes what a live session
// owns (SweepShared). Commands name host paths, mapped into the container's view.
//
// It knows nothing of rows or evidence: it writes the log it is given and hands each
// command's record to its Recorder.
package serving
