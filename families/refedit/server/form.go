package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"qualkit/families/refedit/edit"
)

// Form field names beyond the edit settings.
const (
	fieldPrompt         = "prompt"
	fieldModel          = "model"
	fieldResponseFormat = "response_format"
	fieldN              = "n"
)

// editForm is the multipart body of an edit request.
type editForm struct {
	fields map[string]string // the text fields, by name
	image  []byte            // nil when no image part came
}

func isTextField(name string) bool {
	return slices.Contains([]string{fieldPrompt, fieldModel, fieldResponseFormat, fieldN}, name) ||
		slices.Contains(edit.SettingFields(), name) || openAIChoices[name] != nil ||
		slices.Contains(openAIFree, name) || name == "output_compression" // checked by checkOpenAI
}

// maxFieldBytes bounds every text field but the prompt: model, n, response_format and
// the settings are short.
const maxFieldBytes = 1024

// readForm streams the multipart body (never spilling to disk), rejecting unknown
// fields, repeated fields, over-long text fields and a second image as they arrive.
// r.Body must already be bounded by http.MaxBytesReader; hitting the bound is a 413.
// dropUnknown (the accept-unknown fault only) drops an unknown field instead.
func readForm(r *http.Request, maxPrompt int, dropUnknown bool) (editForm, *apiError) {
	f := editForm{fields: map[string]string{}}
	mr, err := r.MultipartReader()
	if err != nil {
		return f, badRequest("", fmt.Sprintf("want a multipart/form-data body: %v", err))
	}
	for parts := 0; ; parts++ {
		part, err := mr.NextPart()
		// bufio.ErrBufferFull before the first part: a whole buffer of body held no
		// boundary, the same fault as an empty body without it, said the same way.
		if parts == 0 && (errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull)) {
			_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			return f, badRequest("", fmt.Sprintf("malformed multipart body: no part delimited by the boundary %s that Content-Type declares "+
				"(a body built for another boundary, or not multipart at all)", quoteBounded(params["boundary"])))
		}
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return f, bodyError(err, "")
		}
		name := part.FormName()
		switch {
		case name == "image" || name == "image[]":
			if f.image != nil {
				return f, badRequest(name, "exactly one image file part (image or image[]) is allowed, got more")
			}
			data, err := io.ReadAll(part)
			if err != nil {
				return f, bodyError(err, name)
			}
			f.image = data // never nil: io.ReadAll returns an empty slice for an empty part
		case isTextField(name):
			if _, dup := f.fields[name]; dup {
				return f, badRequest(name, fmt.Sprintf("field %q given more than once", name))
			}
			limit, flag := maxFieldBytes, ""
			if name == fieldPrompt {
				limit, flag = maxPrompt, " (--max-prompt-bytes)"
			}
			// One byte past the limit is enough to know it is over: the rest is never held.
			data, err := io.ReadAll(io.LimitReader(part, int64(limit)+1))
			if err != nil {
				return f, bodyError(err, name)
			}
			if len(data) > limit {
				return f, &apiError{status: http.StatusRequestEntityTooLarge, param: name,
					message: fmt.Sprintf("field %q is over the limit of %d bytes%s", name, limit, flag)}
			}
			f.fields[name] = string(data)
		case refusedField(name) != "":
			return f, badRequest(name, refusedField(name))
		case dropUnknown:
			if _, err := io.Copy(io.Discard, part); err != nil {
				return f, bodyError(err, name)
			}
		default:
			clipped := prefix(name, maxQuoted)
			return f, badRequest(clipped, fmt.Sprintf("unknown field %s", quoteBounded(name)))
		}
	}
}

// bodyError is 413 when the body ran past its bound, 408 when it did not arrive in
// time, else 400.
func bodyError(err error, param string) *apiError {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &apiError{status: http.StatusRequestEntityTooLarge, param: param,
			message: fmt.Sprintf("request body over the limit of %d bytes", tooBig.Limit)}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &apiError{status: http.StatusRequestTimeout, param: param,
			message: "the request body did not arrive within the server's body timeout (--body-timeout)"}
	}
	return badRequest(param, fmt.Sprintf("read multipart body: %v", err))
}

// The other fields of OpenAI's images.edit: one that cannot change refedit's edit is
// accepted, checked against OpenAI's values and reported as "ignored"; one refedit
// cannot honour is refused by name, never dropped (README "OpenAI's images.edit").

// openAIChoices are the accepted fields with a closed set of values, OpenAI's, each
// with why it cannot change refedit's output.
var openAIChoices = map[string][]string{
	// refedit's edit is exact at every quality: there is no rendering effort to spend.
	"quality": {"auto", "low", "medium", "high", "xhigh", "max", "standard"},
	// refedit plans nothing: the instruction picks one fixed edit.
	"complexity": {"low", "medium", "high"},
	// refedit's edit is a fixed function of every input pixel.
	"input_fidelity": {"low", "high"},
	// refedit's output is always opaque RGB; transparent is refused by name.
	"background": {"auto", "opaque"},
	// PNG is refedit's one output format.
	"output_format": {"png"},
	// refedit answers with one JSON body.
	"stream": {"false"},
}

// openAIFree are accepted fields with any value: identifiers for OpenAI's abuse
// monitoring, which refedit does not have. Only their length is recorded: an identifier
// of a user does not belong in the evidence.
var openAIFree = []string{"user", "safety_identifier"}

// openAIRefused are fields refedit cannot honour, with why and what to do instead.
var openAIRefused = map[string]string{
	"mask":              "a mask restricts the edit to its transparent area; refedit edits the whole image (send the image alone)",
	"markup":            "a markup overlay guides the edit; refedit's instruction picks one fixed edit of the whole image (send the image alone)",
	"partial_images":    "partial images are streamed; refedit answers with one JSON body (leave partial_images out)",
	"frame_count":       "frames are for output_format=gif; refedit writes one PNG (leave frame_count out)",
	"frame_duration_ms": "frames are for output_format=gif; refedit writes one PNG (leave frame_duration_ms out)",
}

const maxOutputCompression = 100

// refusedField is the message for a field refedit refuses, "" when it is not one.
func refusedField(name string) string {
	if why, ok := openAIRefused[name]; ok {
		return fmt.Sprintf("%s is not supported: %s", name, why)
	}
	if name == "svg" || strings.HasPrefix(name, "svg[") {
		return fmt.Sprintf("%s is not supported: svg selects the author of output_format=svg; refedit writes PNG only (leave svg out)", name)
	}
	return ""
}

// checkOpenAI checks the accepted OpenAI fields the form carries and returns what it
// ignored: field -> the value as recorded.
func checkOpenAI(fields map[string]string) (map[string]string, *apiError) {
	ignored := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(openAIChoices)) {
		v, ok := fields[name]
		if !ok {
			continue
		}
		values := openAIChoices[name]
		got := strings.ToLower(strings.TrimSpace(v))
		if !slices.Contains(values, got) {
			if name == "background" && got == "transparent" {
				return nil, badRequest(name, `background "transparent" is not supported: refedit's output is opaque RGB; want auto or opaque`)
			}
			return nil, badRequest(name, fmt.Sprintf("%s %s is not supported: want one of %s", name, quoteBounded(v), strings.Join(values, ", ")))
		}
		ignored[name] = got
	}
	if v, ok := fields["output_compression"]; ok { // a percentage in OpenAI's API, digits only
		s := strings.TrimSpace(v)
		n, err := strconv.Atoi(s)
		if s == "" || strings.Trim(s, "0123456789") != "" || err != nil || n > maxOutputCompression {
			return nil, badRequest("output_compression", fmt.Sprintf("output_compression %s: want an integer in 0..%d", quoteBounded(v), maxOutputCompression))
		}
		ignored["output_compression"] = strconv.Itoa(n)
	}
	for _, name := range openAIFree {
		if v, ok := fields[name]; ok {
			ignored[name] = fmt.Sprintf("%d bytes", len(v))
		}
	}
	if len(ignored) == 0 {
		return nil, nil
	}
	return ignored, nil
}
