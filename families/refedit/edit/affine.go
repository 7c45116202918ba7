package edit

import "fmt"

// affineOp is out_c = m[c][0]*R + m[c][1]*G + m[c][2]*B + offset[c], summed left to right.
type affineOp struct {
	m      [3][3]float32
	offset [3]float32
}

func newAffine(m *[3][3]float64, offset *[3]float64) (operation, error) {
	if m == nil || offset == nil {
		return nil, fmt.Errorf("needs matrix and offset")
	}
	var op affineOp
	identity := true
	for c := range 3 {
		for j := range 3 {
			if !finite(m[c][j]) {
				return nil, fmt.Errorf("matrix[%d][%d] = %v: want a finite number", c, j, m[c][j])
			}
			op.m[c][j] = float32(m[c][j])
			if (c == j && m[c][j] != 1) || (c != j && m[c][j] != 0) {
				identity = false
			}
		}
		if !finite(offset[c]) {
			return nil, fmt.Errorf("offset[%d] = %v: want a finite number", c, offset[c])
		}
		op.offset[c] = float32(offset[c])
		if offset[c] != 0 {
			identity = false
		}
	}
	if identity {
		return nil, fmt.Errorf("identity matrix with zero offset changes nothing")
	}
	return op, nil
}

func (op affineOp) apply(b *raster, _ Settings) *raster {
	out := newRaster(b.w, b.h)
	for i := 0; i < len(b.pix); i += 3 {
		r, g, bl := b.pix[i], b.pix[i+1], b.pix[i+2]
		for c := range 3 {
			row := &op.m[c]
			v := float32(row[0] * r)
			v += float32(row[1] * g)
			v += float32(row[2] * bl)
			out.pix[i+c] = v + op.offset[c]
		}
	}
	return out
}
