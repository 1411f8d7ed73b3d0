// Package geohash is Redis's geohash arithmetic (geohash.c, geohash_helper.c): the 52-bit scores
// GEOADD stores, the positions and distances GEOPOS and GEODIST return, and the cells GEOSEARCH
// visits, in the same order, so that results match Redis's. It knows nothing of keys or commands
// (those are in package engine).
package geohash

import "math"

const (
	// StepMax is the precision of stored scores: 26 bits per axis.
	StepMax = 26
	// The limits of a valid position (EPSG:3785).
	LatMin = -85.05112878
	LatMax = 85.05112878
	LonMin = -180.0
	LonMax = 180.0

	earthRadiusMeters = 6372797.560856
	mercatorMax       = 20037726.37
	degToRad          = math.Pi / 180.0
	alphabet          = "0123456789bcdefghjkmnpqrstuvwxyz"
)

type geoBits struct {
	bits uint64
	step uint
}

type geoRange struct{ min, max float64 }

type geoArea struct {
	hash      geoBits
	longitude geoRange
	latitude  geoRange
}

type geoNeighbors struct {
	north, east, west, south, northEast, southEast, northWest, southWest geoBits
}

// interleave64 spreads xlo into the even bits and ylo into the odd ones.
func interleave64(xlo, ylo uint32) uint64 {
	B := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF}
	S := [...]uint{1, 2, 4, 8, 16}
	x, y := uint64(xlo), uint64(ylo)
	for i := 4; i >= 0; i-- {
		x = (x | (x << S[i])) & B[i]
		y = (y | (y << S[i])) & B[i]
	}
	return x | (y << 1)
}

// deinterleave64 undoes interleave64: the even bits in the low 32, the odd ones in the high.
func deinterleave64(interleaved uint64) uint64 {
	B := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0x00000000FFFFFFFF}
	S := [...]uint{0, 1, 2, 4, 8, 16}
	x, y := interleaved, interleaved>>1
	for i := 0; i < 6; i++ {
		x = (x | (x >> S[i])) & B[i]
		y = (y | (y >> S[i])) & B[i]
	}
	return x | (y << 32)
}

func geohashEncode(lonRange, latRange geoRange, lon, lat float64, step uint) (geoBits, bool) {
	if step > 32 || step == 0 || lat < latRange.min || lat > latRange.max || lon < lonRange.min || lon > lonRange.max {
		return geoBits{}, false
	}
	latOffset := (lat - latRange.min) / (latRange.max - latRange.min)
	lonOffset := (lon - lonRange.min) / (lonRange.max - lonRange.min)
	latOffset *= float64(uint64(1) << step)
	lonOffset *= float64(uint64(1) << step)
	return geoBits{bits: interleave64(uint32(latOffset), uint32(lonOffset)), step: step}, true
}

func wgs84Ranges() (geoRange, geoRange) {
	return geoRange{LonMin, LonMax}, geoRange{LatMin, LatMax}
}

func geohashDecode(lonRange, latRange geoRange, hash geoBits) geoArea {
	sep := deinterleave64(hash.bits)
	latScale := latRange.max - latRange.min
	lonScale := lonRange.max - lonRange.min
	ilat := uint32(sep)
	ilon := uint32(sep >> 32)
	div := float64(uint64(1) << hash.step)
	return geoArea{
		hash:      hash,
		latitude:  geoRange{latRange.min + (float64(ilat)*1.0/div)*latScale, latRange.min + ((float64(ilat)+1)*1.0/div)*latScale},
		longitude: geoRange{lonRange.min + (float64(ilon)*1.0/div)*lonScale, lonRange.min + ((float64(ilon)+1)*1.0/div)*lonScale},
	}
}

// scoreBits converts a score to geohash bits as Redis's C cast (uint64_t)score does on x86-64,
// so that GEOPOS on members ZADD gave any score (negative, huge, infinite) answers as Redis does.
// Go leaves out-of-range float-to-integer conversions implementation-defined, so each case is
// spelled out: below 2^63 a signed conversion (out of range: the "integer indefinite" value
// 1<<63), at or above it the same on the value minus 2^63, with the top bit flipped back.
func scoreBits(f float64) uint64 {
	const two63 = 9223372036854775808.0
	signed := func(x float64) uint64 {
		if x != x || x < -two63 || x >= two63 { // NaN or out of int64's range
			return 1 << 63
		}
		return uint64(int64(x))
	}
	if f >= two63 {
		return signed(f-two63) ^ 1<<63
	}
	return signed(f)
}

// Decode turns a stored score back into the centre of its cell, as GEOPOS reports it.
func Decode(score float64) (lon, lat float64) {
	lonR, latR := wgs84Ranges()
	area := geohashDecode(lonR, latR, geoBits{bits: scoreBits(score), step: StepMax})
	lon = (area.longitude.min + area.longitude.max) / 2
	lon = math.Min(math.Max(lon, LonMin), LonMax)
	lat = (area.latitude.min + area.latitude.max) / 2
	lat = math.Min(math.Max(lat, LatMin), LatMax)
	return lon, lat
}

func geohashAlign52(h geoBits) uint64 { return h.bits << (52 - h.step*2) }

// geohashMove steps h one cell along the axis whose bits mask selects (longitude: the odd bits,
// latitude: the even ones), as Redis's geohash_move_x and geohash_move_y do.
func geohashMove(h *geoBits, d int, mask uint64) {
	if d == 0 {
		return
	}
	a, b := h.bits&mask, h.bits&^mask
	zz := ^mask >> (64 - h.step*2) // the other axis's bits, set: carries jump over them
	if d > 0 {
		a += zz + 1
	} else {
		a |= zz
		a -= zz + 1
	}
	a &= mask >> (64 - h.step*2)
	h.bits = a | b
}

const (
	geoLonBits = 0xaaaaaaaaaaaaaaaa
	geoLatBits = 0x5555555555555555
)

func geohashNeighbors(h geoBits) geoNeighbors {
	move := func(dx, dy int) geoBits {
		n := h
		geohashMove(&n, dx, geoLonBits)
		geohashMove(&n, dy, geoLatBits)
		return n
	}
	return geoNeighbors{
		east: move(1, 0), west: move(-1, 0), south: move(0, -1), north: move(0, 1),
		northWest: move(-1, 1), southWest: move(-1, -1), northEast: move(1, 1), southEast: move(1, -1),
	}
}

func geoLatDistance(lat1, lat2 float64) float64 {
	return earthRadiusMeters * math.Abs(lat2*degToRad-lat1*degToRad)
}

// Distance is Redis's haversine distance in meters.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := lon1*degToRad, lon2*degToRad
	v := math.Sin((lon2r - lon1r) / 2)
	if v == 0.0 {
		return geoLatDistance(lat1, lat2)
	}
	lat1r, lat2r := lat1*degToRad, lat2*degToRad
	u := math.Sin((lat2r - lat1r) / 2)
	a := u*u + math.Cos(lat1r)*math.Cos(lat2r)*v*v
	return 2.0 * earthRadiusMeters * math.Asin(math.Sqrt(a))
}

func geoEstimateSteps(rangeMeters, lat float64) uint {
	if rangeMeters == 0 {
		return 26
	}
	step := 1
	for rangeMeters < mercatorMax {
		rangeMeters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	step = max(step, 1)
	step = min(step, 26)
	return uint(step)
}

// geoShape is a GEOSEARCH area: a circle (radius) or a box (width, height), in the unit's scale.
// Shape is a GEOSEARCH area around (Lon, Lat): a circle (Radius) or a box (Width, Height), in a
// unit of Conversion meters.
type Shape struct {
	Lon, Lat      float64
	Circle        bool
	Radius        float64
	Width, Height float64
	Conversion    float64 // meters per unit
}

func (sh *Shape) boundingBox() (minLon, minLat, maxLon, maxLat float64) {
	height, width := sh.Conversion*sh.Radius, sh.Conversion*sh.Radius
	if !sh.Circle {
		height, width = sh.Conversion*sh.Height/2, sh.Conversion*sh.Width/2
	}
	latDelta := height / earthRadiusMeters / degToRad
	lonDeltaTop := width / earthRadiusMeters / math.Cos((sh.Lat+latDelta)*degToRad) / degToRad
	lonDeltaBottom := width / earthRadiusMeters / math.Cos((sh.Lat-latDelta)*degToRad) / degToRad
	if sh.Lat < 0 {
		minLon, maxLon = sh.Lon-lonDeltaBottom, sh.Lon+lonDeltaBottom
	} else {
		minLon, maxLon = sh.Lon-lonDeltaTop, sh.Lon+lonDeltaTop
	}
	return minLon, sh.Lat - latDelta, maxLon, sh.Lat + latDelta
}

// searchCells is Redis's geohashCalculateAreasByShapeWGS84: the centre cell and its eight
// neighbours (zero where they cannot hold a match), in the order Redis visits them.
func (sh *Shape) searchCells() []geoBits {
	minLon, minLat, maxLon, maxLat := sh.boundingBox()
	radius := sh.Radius
	if !sh.Circle {
		radius = math.Sqrt((sh.Width/2)*(sh.Width/2) + (sh.Height/2)*(sh.Height/2))
	}
	radius *= sh.Conversion
	steps := geoEstimateSteps(radius, sh.Lat)
	lonR, latR := wgs84Ranges()
	hash, _ := geohashEncode(lonR, latR, sh.Lon, sh.Lat, steps)
	nb := geohashNeighbors(hash)
	area := geohashDecode(lonR, latR, hash)
	decrease := false
	{
		north := geohashDecode(lonR, latR, nb.north)
		south := geohashDecode(lonR, latR, nb.south)
		east := geohashDecode(lonR, latR, nb.east)
		west := geohashDecode(lonR, latR, nb.west)
		if north.latitude.max < maxLat || south.latitude.min > minLat || east.longitude.max < maxLon || west.longitude.min > minLon {
			decrease = true
		}
	}
	if steps > 1 && decrease {
		steps--
		hash, _ = geohashEncode(lonR, latR, sh.Lon, sh.Lat, steps)
		nb = geohashNeighbors(hash)
		area = geohashDecode(lonR, latR, hash)
	}
	if steps >= 2 {
		if area.latitude.min < minLat {
			nb.south, nb.southWest, nb.southEast = geoBits{}, geoBits{}, geoBits{}
		}
		if area.latitude.max > maxLat {
			nb.north, nb.northEast, nb.northWest = geoBits{}, geoBits{}, geoBits{}
		}
		if area.longitude.min < minLon {
			nb.west, nb.southWest, nb.northWest = geoBits{}, geoBits{}, geoBits{}
		}
		if area.longitude.max > maxLon {
			nb.east, nb.southEast, nb.northEast = geoBits{}, geoBits{}, geoBits{}
		}
	}
	return []geoBits{hash, nb.north, nb.south, nb.east, nb.west, nb.northEast, nb.northWest, nb.southEast, nb.southWest}
}

// Contains reports whether a point is in the shape, and its distance from the centre in meters.
func (sh *Shape) Contains(lon, lat float64) (float64, bool) {
	if sh.Circle {
		d := Distance(lon, lat, sh.Lon, sh.Lat)
		return d, d <= sh.Radius*sh.Conversion
	}
	if geoLatDistance(lat, sh.Lat) > sh.Height*sh.Conversion/2 {
		return 0, false
	}
	if Distance(lon, lat, sh.Lon, lat) > sh.Width*sh.Conversion/2 {
		return 0, false
	}
	return Distance(sh.Lon, sh.Lat, lon, lat), true
}

// Score is the 52-bit score GEOADD stores for a position, which must be within the limits.
func Score(lon, lat float64) uint64 {
	lonR, latR := wgs84Ranges()
	h, _ := geohashEncode(lonR, latR, lon, lat, StepMax)
	return geohashAlign52(h)
}

// String is the standard 11-character geohash of a position, as GEOHASH replies it. Redis keeps
// latitudes within ±85.05; standard geohashes use ±90, so the position is encoded again.
func String(lon, lat float64) [11]byte {
	h, _ := geohashEncode(geoRange{-180, 180}, geoRange{-90, 90}, lon, lat, StepMax)
	var buf [11]byte
	for i := 0; i < 11; i++ {
		idx := 0
		if i < 10 {
			idx = int((h.bits >> (52 - uint((i+1)*5))) & 0x1f)
		}
		buf[i] = alphabet[idx]
	}
	return buf
}

// ScoreRanges are the score intervals [lo, hi) of the cells a search must visit for the shape,
// in the order Redis visits them, without empty or repeated cells.
func (sh *Shape) ScoreRanges() [][2]float64 {
	cells := sh.searchCells()
	out := make([][2]float64, 0, len(cells))
	last := -1
	for i, cell := range cells {
		if cell.bits == 0 && cell.step == 0 {
			continue
		}
		if last >= 0 && cell == cells[last] {
			continue // with a huge radius neighbours can coincide
		}
		next := cell
		next.bits++
		out = append(out, [2]float64{float64(geohashAlign52(cell)), float64(geohashAlign52(next))})
		last = i
	}
	return out
}
