package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // fixtures may be JPEG; their dimensions are checked
	_ "image/png"
	"os"
	"path/filepath"
	"qualkit/internal/wire"
	"sort"
	"strings"
)

// Fixtures is a pinned workload: reference images with their hashes and provenance,
// (image, instruction) pairs, the extra inputs every request carries, and the
// reference-influence probe.
//
// The images live once in a pool (fixtures/images/pool.json), which pins each by sha256,
// byte count and size with its provenance and licence; a workload manifest names the
// pool and lists the images it uses by file and sha256, and loading fills in the rest.
// A manifest without a pool lists full entries and keeps its images beside it (the
// evidence folder's copy, test fixtures).
type Fixtures struct {
	Version   int                        `json:"version"`
	Pool      string                     `json:"pool,omitempty"` // the pool file, relative to the manifest
	Images    []FixtureImage             `json:"images"`
	Settings  map[string]json.RawMessage `json:"settings"`
	Pairs     []Pair                     `json:"pairs"`
	Influence Influence                  `json:"influence"`

	dir    string
	byFile map[string]FixtureImage
}

type FixtureImage struct {
	File       string `json:"file"`
	SHA256     string `json:"sha256"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	Bytes      int64  `json:"bytes"`
	Provenance string `json:"provenance"`
	Licence    string `json:"licence"`
}

// Pair is one benchmark input: a reference image and an instruction.
type Pair struct {
	ID          string `json:"id"`
	Image       string `json:"image"`
	Instruction string `json:"instruction"`
}

// Influence is the probe that the reference image matters: one instruction, two images.
type Influence struct {
	Instruction string                     `json:"instruction"`
	Images      []string                   `json:"images"`
	Settings    map[string]json.RawMessage `json:"settings,omitempty"` // default: the workload's settings
}

// LoadFixtures reads a manifest and checks every image against its pinned sha256,
// byte count and dimensions. Any mismatch is an error naming the file.
func LoadFixtures(path string) (*Fixtures, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fixtures manifest: %w", err)
	}
	var fx Fixtures
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&fx); err != nil {
		return nil, fmt.Errorf("fixtures manifest %s: %w", path, err)
	}
	fx.dir = filepath.Dir(path)
	if fx.Pool != "" {
		if err := fx.fromPool(filepath.Join(fx.dir, fx.Pool)); err != nil {
			return nil, fmt.Errorf("fixtures manifest %s: %w", path, err)
		}
	}
	fx.byFile = map[string]FixtureImage{}
	for _, im := range fx.Images {
		if err := fx.verify(im); err != nil {
			return nil, fmt.Errorf("fixtures manifest %s: %w", path, err)
		}
		fx.byFile[im.File] = im
	}
	if err := fx.checkRefs(); err != nil {
		return nil, fmt.Errorf("fixtures manifest %s: %w", path, err)
	}
	return &fx, nil
}

// fromPool replaces the manifest's image entries (file and sha256) with the pool's full
// entries, after checking that the pool pins each at the sha256 the manifest expects;
// the images are then read from the pool's folder.
func (fx *Fixtures) fromPool(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("image pool: %w", err)
	}
	var pool struct {
		Images []FixtureImage `json:"images"`
	}
	if err := json.Unmarshal(raw, &pool); err != nil {
		return fmt.Errorf("image pool %s: %w", path, err)
	}
	byFile := map[string]FixtureImage{}
	for _, im := range pool.Images {
		byFile[im.File] = im
	}
	for i, want := range fx.Images {
		im, ok := byFile[want.File]
		switch {
		case !ok:
			return fmt.Errorf("image %s is not in the pool %s: add it there (fixtures/images/generate.py writes the pool)", want.File, path)
		case want.SHA256 != im.SHA256:
			return fmt.Errorf("image %s: the manifest pins sha256 %s, the pool %s has %s: the image changed; review the workload and update its pin", want.File, want.SHA256, path, im.SHA256)
		}
		fx.Images[i] = im
	}
	fx.dir = filepath.Dir(path)
	fx.Pool = "" // resolved: the entries are now the pool's full ones
	return nil
}

func (fx *Fixtures) verify(im FixtureImage) error {
	p := filepath.Join(fx.dir, im.File)
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("image %s: %w", im.File, err)
	}
	if got := bytesSHA256(data); got != im.SHA256 {
		return fmt.Errorf("image %s: sha256 %s, manifest pins %s (restore the file or regenerate the manifest)", im.File, got, im.SHA256)
	}
	if int64(len(data)) != im.Bytes {
		return fmt.Errorf("image %s: %d bytes, manifest pins %d", im.File, len(data), im.Bytes)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("image %s: %w", im.File, err)
	}
	if cfg.Width != im.Width || cfg.Height != im.Height {
		return fmt.Errorf("image %s: %dx%d, manifest pins %dx%d", im.File, cfg.Width, cfg.Height, im.Width, im.Height)
	}
	return nil
}

func (fx *Fixtures) checkRefs() error {
	if len(fx.Pairs) == 0 {
		return fmt.Errorf("no pairs")
	}
	ids := map[string]bool{}
	for _, p := range fx.Pairs {
		if _, ok := fx.byFile[p.Image]; !ok {
			return fmt.Errorf("pair %q names image %q, which the manifest does not list", p.ID, p.Image)
		}
		if p.Instruction == "" || ids[p.ID] {
			return fmt.Errorf("pair %q: empty instruction or duplicate id", p.ID)
		}
		ids[p.ID] = true
	}
	if len(fx.Influence.Images) != 2 || fx.Influence.Images[0] == fx.Influence.Images[1] {
		return fmt.Errorf("influence needs two different images, got %v", fx.Influence.Images)
	}
	for _, f := range fx.Influence.Images {
		if _, ok := fx.byFile[f]; !ok {
			return fmt.Errorf("influence names image %q, which the manifest does not list", f)
		}
	}
	return nil
}

// ImagePath is the absolute path of a listed image.
func (fx *Fixtures) ImagePath(file string) string { return filepath.Join(fx.dir, file) }

// Image returns the manifest entry of a listed image.
func (fx *Fixtures) Image(file string) FixtureImage { return fx.byFile[file] }

// ExtraInputs renders the settings as one AIPerf --extra-inputs JSON object, keys
// sorted. The JSON form, unlike key:value, keeps values exactly: key:value strips
// whitespace (a negative prompt of " " would arrive as ""), splits on commas and guesses
// types. Numbers keep their JSON spelling, which is what AIPerf's str() puts on the wire.
func (fx *Fixtures) ExtraInputs() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range fx.SettingKeys() {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		var val bytes.Buffer
		json.Compact(&val, fx.Settings[k])
		b.Write(key)
		b.WriteByte(':')
		b.Write(val.Bytes())
	}
	b.WriteByte('}')
	return b.String()
}

// FormSettings renders the settings as the multipart text fields a request carries.
func (fx *Fixtures) FormSettings() map[string]string { return formSettings(fx.Settings) }

// InfluenceSettings are the influence probe's own settings, else the workload's.
func (fx *Fixtures) InfluenceSettings() map[string]string {
	if len(fx.Influence.Settings) > 0 {
		return formSettings(fx.Influence.Settings)
	}
	return fx.FormSettings()
}

func formSettings(s map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range s {
		out[k] = settingString(v)
	}
	return out
}

func (fx *Fixtures) SettingKeys() []string {
	keys := make([]string, 0, len(fx.Settings))
	for k := range fx.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func settingString(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(v))
}

// AIPerfInput renders AIPerf's input file: one line per pair, in order, each written by
// proto with the pair's exact image bytes, its instruction and the workload's settings.
func (fx *Fixtures) AIPerfInput(proto wire.Protocol) ([]byte, error) {
	var buf bytes.Buffer
	for _, p := range fx.Pairs {
		data, err := os.ReadFile(fx.ImagePath(p.Image))
		if err != nil {
			return nil, fmt.Errorf("pair %s: %w", p.ID, err)
		}
		line, err := proto.AIPerfInput(wire.Request{Image: data, Prompt: p.Instruction, Settings: fx.FormSettings()})
		if err != nil {
			return nil, fmt.Errorf("pair %s: %w", p.ID, err)
		}
		buf.Write(line)
	}
	return buf.Bytes(), nil
}

// LargestRequest is the size of the largest body the workload sends over proto: every
// pair with the workload's settings, and the influence probe's images with its own.
func (fx *Fixtures) LargestRequest(proto wire.Protocol, model string) (int64, error) {
	type one struct {
		image, prompt string
		settings      map[string]string
	}
	var all []one
	for _, p := range fx.Pairs {
		all = append(all, one{p.Image, p.Instruction, fx.FormSettings()})
	}
	for _, im := range fx.Influence.Images {
		all = append(all, one{im, fx.Influence.Instruction, fx.InfluenceSettings()})
	}
	var largest int64
	for _, o := range all {
		data, err := os.ReadFile(fx.ImagePath(o.image))
		if err != nil {
			return 0, err
		}
		body, _, err := proto.Encode(model, wire.Request{Image: data, Prompt: o.prompt, Settings: o.settings})
		if err != nil {
			return 0, fmt.Errorf("a request of image %s: %w", o.image, err)
		}
		largest = max(largest, int64(len(body)))
	}
	return largest, nil
}
