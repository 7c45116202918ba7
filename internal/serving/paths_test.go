package serving

import (
	"reflect"
	"testing"
)

func TestPathMapMapsHostPathsIntoTheContainer(t *testing.T) {
	c := &Container{
		Mounts: []Mount{{Host: "/ev/row", Container: "/qualkit/evidence"}, {Host: "/ev/row/serve", Container: "/qualkit/records"}, {Host: "/src/trtmc", Container: "/src"}},
		Image:  Image{Paths: map[string]string{"/tmp/work/image/refedit": "/refedit"}},
	}
	m := newPathMap(c)
	got := m.command(Command{
		Args: []string{"/tmp/work/image/refedit", "serve", "/ev/row/serve/records.jsonl", "--junitxml=/ev/row/j.xml", "--flag=/other", "/ev/rowboat", "-o", "/src/trtmc"},
		Env:  []string{"TRTMC_ROOT=/src/trtmc/build", "HF_HOME=/models"},
		Dir:  "/src/trtmc",
	})
	want := Command{
		Args: []string{"/refedit", "serve", "/qualkit/records/records.jsonl", "--junitxml=/qualkit/evidence/j.xml", "--flag=/other", "/ev/rowboat", "-o", "/src"},
		Env:  []string{"TRTMC_ROOT=/src/build", "HF_HOME=/models"},
		Dir:  "/src",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mapped\n got %+v\nwant %+v", got, want)
	}
}
