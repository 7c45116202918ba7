package trtmcdouble

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
)

// object is a JSON object that keeps its keys in order, as a Python dict does: perf-serve
// merges requests with {**base, **body} and walks them for $file inputs in that order,
// so the imitation must too. Values are object, []any, json.Number, string, bool or nil.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

func (o *object) get(k string) (any, bool) { v, ok := o.vals[k]; return v, ok }

// set replaces k's value where it stands, or appends k.
func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

// clone is a shallow copy.
func (o *object) clone() *object {
	c := newObject()
	for _, k := range o.keys {
		c.set(k, o.vals[k])
	}
	return c
}

// merged is {**o, **over}.
func (o *object) merged(over *object) *object {
	c := o.clone()
	for _, k := range over.keys {
		c.set(k, over.vals[k])
	}
	return c
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := marshalPlain(k)
		if err != nil {
			return nil, err
		}
		vb, err := marshalPlain(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// decodeOrdered reads one JSON value, objects as *object and numbers as json.Number.
func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("extra data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := t.(type) {
	case json.Delim:
		switch d {
		case '{':
			o := newObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(kt.(string), v)
			}
			_, err := dec.Token()
			return o, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
	}
	if n, ok := t.(json.Number); ok {
		return pyNumber(n), nil
	}
	return t, nil
}

// pyNumber spells a JSON number as Python's json.dumps(json.loads(n)) does: perf-serve
// decodes every body, worker line and --set value, so what it writes back is spelled by
// Python, not as sent (4.50 is 4.5, 1E2 is 100.0, -0 is 0).
func pyNumber(n json.Number) json.Number {
	if strings.ContainsAny(string(n), ".eE") {
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return n
		}
		return pyFloat(f)
	}
	if n == "-0" {
		return "0"
	}
	return n
}

// pyFloat spells a float as Python's json.dumps does (float.__repr__): the shortest
// digits that read back the same, with ".0" when integral, in exponent form below 1e-4
// and from 1e16 (1e-05, 1e+16); NaN and Infinity as Python writes them.
func pyFloat(f float64) json.Number {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX, as Python's exponent form
	if exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:]); exp < -4 || exp >= 16 {
		return json.Number(e)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return json.Number(s)
}

// pyDumps is Python's json.dumps(v) (separators ", " and ": ", non-ASCII escaped), or,
// with indent, json.dumps(v, indent=2).
func pyDumps(v any, indent bool) ([]byte, error) {
	b, err := marshalPlain(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if indent {
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return nil, err
		}
	} else {
		inString := false
		for i := 0; i < len(b); i++ {
			c := b[i]
			out.WriteByte(c)
			switch {
			case inString && c == '\\':
				i++
				out.WriteByte(b[i])
			case c == '"':
				inString = !inString
			case !inString && (c == ',' || c == ':'):
				out.WriteByte(' ')
			}
		}
	}
	// ensure_ascii: non-ASCII appears only inside strings, each rune as \uXXXX (a
	// surrogate pair above U+FFFF), in lower-case hex.
	var ascii bytes.Buffer
	for _, r := range out.String() {
		switch {
		case r < 0x80:
			ascii.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&ascii, "\\u%04x\\u%04x", r1, r2)
		default:
			fmt.Fprintf(&ascii, "\\u%04x", r)
		}
	}
	return ascii.Bytes(), nil
}

// pyRepr is Python's repr() of a str: single quotes unless it holds one and no double
// quote, backslash, quote, \t, \n, \r and other control characters escaped.
func pyRepr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\' || r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
