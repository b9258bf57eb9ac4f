package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
)

// Colors of the picture.
var (
	white      = color.RGBA{255, 255, 255, 255}
	black      = color.RGBA{0, 0, 0, 255}
	grey       = color.RGBA{200, 200, 200, 255}
	dark       = color.RGBA{90, 90, 90, 255}
	targetRed  = color.RGBA{214, 39, 40, 255}
	okGreen    = color.RGBA{44, 160, 44, 255}
	barColor   = map[string]color.RGBA{"passthrough": {31, 119, 180, 255}, "fallback": {255, 127, 14, 255}, "nvme": {127, 127, 127, 255}}
	barTargets = []string{"passthrough", "fallback", "nvme"}
)

// Layout of the picture, in pixels.
const (
	width     = 1120
	heightTop = 470 // the ratio chart
	heightBot = 400 // the scale run
	marginL   = 60
	barGap    = 6  // between the bars of a group
	groupGap  = 40 // between groups
)

// targetRatio is the acceptance target of op on target as a ratio to
// tmpfs, or 0 for none (issue 10's goals). The miss target (40k/s) is
// absolute, the spill read's 0.9x and the sustained write's 0.8x the nvme
// directory: they become ratios through the baseline's figure.
func targetRatio(r results, op, target string) float64 {
	switch {
	case op == "Read2MiB" && target == "passthrough":
		return 0.95
	case op == "Read2MiB4Threads" && target == "passthrough",
		op == "Read2MiB4Procs" && target == "passthrough":
		return 0.95
	case op == "Read2MiB" && target == "fallback":
		return 0.5
	case op == "WriteBurst2MiB" && target == "passthrough":
		return 0.9
	case op == "Write2MiB" && target == "passthrough":
		if x, ok := r.ratio(op, "nvme"); ok {
			return 0.8 * x
		}
	case op == "StatHit" && target != "nvme":
		return 0.95
	case op == "ReadSpill2MiB" && target == "passthrough":
		if x, ok := r.ratio(op, "nvme"); ok {
			return 0.9 * x
		}
	case op == "StatMiss" && target != "nvme":
		if b, ok := r.get(op, baseline); ok {
			return 40e3 / b.rate()
		}
	}
	return 0
}

// writePNG draws the ratio chart and, with s, the scale run.
func writePNG(w io.Writer, r results, s *scaleResult) error {
	h := heightTop
	if s != nil {
		h += heightBot
	}
	img := image.NewRGBA(image.Rect(0, 0, width, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	drawRatios(img, r)
	if s != nil {
		drawScale(img, s, heightTop)
	}
	return png.Encode(w, img)
}

// drawRatios draws one group of bars per operation: each target's speed
// over tmpfs's, with its absolute speed, and the acceptance targets.
func drawRatios(img *image.RGBA, r results) {
	drawText(img, marginL, 12, "ucmfs mount vs a tmpfs directory: speed / tmpfs speed, same run (1.0 = tmpfs)", 2, black)
	top, bottom := 90, heightTop-70
	ymax := 1.25
	for _, op := range operations {
		for _, t := range barTargets {
			if x, ok := r.ratio(op.bench, t); ok {
				ymax = math.Max(ymax, math.Min(x*1.1, 3))
			}
		}
	}
	ymax = math.Ceil(ymax*4) / 4
	y := func(v float64) int { return bottom - int(math.Min(v, ymax)/ymax*float64(bottom-top)) }
	right := width - 20
	for v := 0.0; v <= ymax+1e-9; v += 0.25 {
		c := grey
		if v == 1 {
			c = dark
		}
		hline(img, marginL, right, y(v), c)
		drawText(img, 20, y(v)-3, fmt.Sprintf("%.2f", v), 1, dark)
	}
	drawText(img, 20, y(1)+7, "tmpfs", 1, dark)
	x := marginL + 20
	groupW := (right - x) / len(operations)
	barW := (groupW-groupGap)/len(barTargets) - barGap
	for _, op := range operations {
		gx := x
		for _, t := range barTargets {
			ratio, ok := r.ratio(op.bench, t)
			if ok {
				fillRect(img, x, y(ratio), barW, bottom-y(ratio), barColor[t])
			}
			if tr := targetRatio(r, op.bench, t); tr > 0 {
				fillRect(img, x-3, y(tr)-1, barW+6, 3, targetRed)
			}
			if ok {
				s, _ := r.get(op.bench, t)
				val := formatRate(s.rate()) + "/s"
				if op.io {
					val = fmt.Sprintf("%.1fGB/s", s.mbPerS/1000)
				}
				drawCentered(img, x+barW/2, y(ratio)-22, fmt.Sprintf("%.2fx", ratio), 1, black)
				drawCentered(img, x+barW/2, y(ratio)-12, val, 1, dark)
			}
			x += barW + barGap
		}
		mid := (gx + x - barGap) / 2
		drawCentered(img, mid, bottom+10, op.short, 1, black)
		if b, ok := r.get(op.bench, baseline); ok {
			val := formatRate(b.rate()) + "/s"
			if op.io {
				val = fmt.Sprintf("%.1f GB/s", b.mbPerS/1000)
			}
			drawCentered(img, mid, bottom+22, "tmpfs "+val, 1, dark)
		}
		x += groupGap - barGap
	}
	hline(img, marginL, right, bottom, black)
	lx := marginL
	for _, t := range barTargets {
		fillRect(img, lx, 48, 14, 14, barColor[t])
		name := t
		if t == "nvme" {
			name = "nvme dir (plain, ext4)"
		}
		drawText(img, lx+20, 50, name, 1, black)
		lx += 40 + textWidth(name, 1)
	}
	fillRect(img, lx, 54, 24, 3, targetRed)
	drawText(img, lx+30, 50, "acceptance target of the issue", 1, black)
	drawText(img, marginL, heightTop-28, "2 MiB blocks; stats per thread; each bar: ratio and absolute speed. Write: mount = create+write+close (publish), write-back to nvme running.", 1, dark)
}

// drawScale draws the scale run as shares of each acceptance budget.
func drawScale(img *image.RGBA, s *scaleResult, y0 int) {
	drawText(img, marginL, y0+6, fmt.Sprintf("scale run, %dk blocks: measured / acceptance limit (1.0 = limit)", s.Blocks/1000), 2, black)
	rows := []struct {
		label     string
		got, lim  float64
		shown     string
		threshold string
	}{
		{"restart: start to ready", s.StartReady, 2, fmt.Sprintf("%.2f s", s.StartReady), "2 s"},
		{"daemon VmRSS when ready", mib(s.RSSReady), mib(max(s.RSSReadyLim, 1)), fmt.Sprintf("%.0f MiB", mib(s.RSSReady)), fmt.Sprintf("%.0f MiB", mib(s.RSSReadyLim))},
		{"daemon VmRSS after du -s twice", mib(s.RSSAfterDu), mib(s.RSSLimit), fmt.Sprintf("%.0f MiB", mib(s.RSSAfterDu)), fmt.Sprintf("%.0f MiB", mib(s.RSSLimit))},
		{"getxattr user.ucm.blocks", s.Getfattr * 1e3, 10, fmt.Sprintf("%.2f ms", s.Getfattr*1e3), "10 ms"},
		{"du -s of the model, first after restart", s.DuCold, 3, fmt.Sprintf("%.2f s", s.DuCold), "3 s"},
		// Rates: the limit is a floor, so the share is limit / rate.
		{"first stat of a block (1/rate)", 40e3, math.Max(s.FirstStat, 1), formatRate(s.FirstStat) + "/s", "40k/s"},
		{"stat of a missing id (1/rate)", 40e3, math.Max(s.MissStat, 1), formatRate(s.MissStat) + "/s", "40k/s"},
	}
	x0, x1 := marginL+300, width-200
	xmax := 1.5
	for _, row := range rows {
		xmax = math.Max(xmax, math.Min(row.got/row.lim*1.05, 3))
	}
	xs := func(v float64) int { return x0 + int(math.Min(v, xmax)/xmax*float64(x1-x0)) }
	top := y0 + 44
	bottom := top + len(rows)*44 - 16
	vline(img, xs(1), top-8, bottom, dark)
	drawCentered(img, xs(1), bottom+6, "limit", 1, dark)
	vline(img, x0, top-8, bottom, black)
	for i, row := range rows {
		ry := top + i*44
		drawText(img, marginL, ry+8, row.label, 1, black)
		share := row.got / row.lim
		c := okGreen
		if share > 1 {
			c = targetRed
		}
		fillRect(img, x0, ry, xs(share)-x0, 24, c)
		drawBoxed(img, xs(share)+8, ry+8, fmt.Sprintf("%s of %s (%.2f)", row.shown, row.threshold, share), 1, black)
	}
}

// drawCentered draws s centered on x, on a white box so that lines
// under it do not cross the text.
func drawCentered(img *image.RGBA, x, y int, s string, scale int, c color.Color) {
	drawBoxed(img, x-textWidth(s, scale)/2, y, s, scale, c)
}

// drawBoxed draws s on a white box.
func drawBoxed(img *image.RGBA, x, y int, s string, scale int, c color.Color) {
	fillRect(img, x-2, y-1, textWidth(s, scale)+4, (glyphH+1)*scale+1, white)
	drawText(img, x, y, s, scale, c)
}

// fillRect fills w x h pixels at (x, y).
func fillRect(img *image.RGBA, x, y, w, h int, c color.Color) {
	draw.Draw(img, image.Rect(x, y, x+w, y+h), image.NewUniform(c), image.Point{}, draw.Src)
}

// hline draws a horizontal line from x0 to x1 at y.
func hline(img *image.RGBA, x0, x1, y int, c color.Color) { fillRect(img, x0, y, x1-x0, 1, c) }

// vline draws a vertical line from y0 to y1 at x.
func vline(img *image.RGBA, x, y0, y1 int, c color.Color) { fillRect(img, x, y0, 1, y1-y0, c) }
