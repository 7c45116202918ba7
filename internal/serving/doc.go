// Package serving runs a row's programs: servers that answer HTTP until stopped (Start)
// and jobs that run to completion (Run), as a local process group or in a container of a
// locally present image (InContainer).
//
// Containers run on the host network (servers such as TRTMC bind loopback only), GPUs
// pinned by UUID, labelled with their session (Owner). No registry is contacted and Ryuk
// is off: what a killed process left, its reaper removes, or a later run's sweep.
// It knows nothing of rows or evidence: each command's record goes to its Recorder.
package serving
