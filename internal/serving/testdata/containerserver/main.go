// Command containerserver is a tiny stand-in for a model server, built static (CGO_ENABLED=0)
// into a FROM scratch image by the container tests, and run as a plain process by them too.
//
// It listens on 127.0.0.1:-port only (like TRTMC's server, so only host networking reaches it)
// and answers GET /health/ready with 503 until -ready-after has passed, then 200; -never-ready
// keeps answering 503. -show-file prints files' content; -try-write tries to create files and prints
// whether it could; then -exit-code N exits N before listening (a job); -tick FILE runs
// until stopped, printing each numbered line before it appends it to FILE. On SIGTERM it
// prints a last line and exits 0, so a test can check that Stop is graceful and the log complete;
// with -hold-term it prints that it held the signal and goes on, as a server loading its
// weights does until the load ends.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	port := flag.Int("port", 0, "loopback port to listen on")
	readyAfter := flag.Duration("ready-after", 0, "answer /health/ready 503 until this much time has passed")
	neverReady := flag.Bool("never-ready", false, "answer /health/ready 503 forever")
	exitCode := flag.Int("exit-code", -1, "print -say and exit with this code before listening")
	say := flag.String("say", "containerserver: hello", "line printed first")
	showFiles := flag.String("show-file", "", "print the content of these files (comma-separated)")
	tryWrites := flag.String("try-write", "", "try to create these files (comma-separated) and print whether it worked")
	tick := flag.String("tick", "", "forever, every 10 ms: print a numbered line, then append it to this file (a job whose log and files must agree)")
	holdTerm := flag.Bool("hold-term", false, "on SIGTERM, print that it was held and go on")
	flag.Parse()

	fmt.Println(*say)
	for _, path := range list(*showFiles) {
		if b, err := os.ReadFile(path); err != nil {
			fmt.Printf("show %s: error: %v\n", path, err)
		} else {
			fmt.Printf("show %s: %s\n", path, b)
		}
	}
	for _, path := range list(*tryWrites) {
		if err := os.WriteFile(path, []byte("written"), 0o644); err != nil {
			fmt.Printf("write %s: error: %v\n", path, err)
		} else {
			fmt.Printf("write %s: ok\n", path)
		}
	}
	if *tick != "" {
		f, err := os.OpenFile(*tick, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "containerserver: tick: %v\n", err)
			os.Exit(2)
		}
		for n := 1; ; n++ {
			fmt.Printf("tick %d\n", n)
			fmt.Fprintf(f, "tick %d\n", n)
			time.Sleep(10 * time.Millisecond)
		}
	}
	if *exitCode >= 0 {
		fmt.Fprintf(os.Stderr, "containerserver: exiting with code %d\n", *exitCode)
		os.Exit(*exitCode)
	}

	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "containerserver: listen: %v\n", err)
		os.Exit(2)
	}
	start := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/health/ready", func(w http.ResponseWriter, _ *http.Request) {
		if *neverReady || time.Since(start) < *readyAfter {
			http.Error(w, "loading", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "containerserver") })
	fmt.Printf("containerserver: listening on %s\n", l.Addr())

	// As PID 1 in a container a signal without a handler is ignored: handle SIGTERM.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sig {
			if *holdTerm {
				fmt.Printf("containerserver: got %v, held\n", s)
				continue
			}
			fmt.Printf("containerserver: got %v, shutting down\n", s)
			os.Exit(0)
		}
	}()
	if err := http.Serve(l, mux); err != nil {
		fmt.Fprintf(os.Stderr, "containerserver: serve: %v\n", err)
		os.Exit(2)
	}
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
