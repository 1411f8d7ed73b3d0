package engine

import (
	"math"
)

// Geohash arithmetic as Redis's geohash.c and geohash_helper.c do it, so that GEOADD stores the
// same 52-bit scores, GEOPOS and GEODIST return the same numbers, and GEOSEARCH visits the same
// cells in the same order.

const (
	geoStepMax          = 26
	geoLatMin           = -85.05112878
	geoLatMax           = 85.05112878
	geoLongMin          = -180.0
	geoLongMax          = 180.0
	earthRadiusMeters   = 6372797.560856
	mercatorMax         = 20037726.37
	degToRad            = math.Pi / 180.0
	geoAlphabet         = "0123456789bcdefghjkmnpqrstuvwxyz"
	errGeoInvalidPair   = "ERR invalid longitude,latitude pair %f,%f"
	errGeoUnsupportUnit = "ERR unsupported unit provided. please use M, KM, FT, MI"
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
	return geoRange{geoLongMin, geoLongMax}, geoRange{geoLatMin, geoLatMax}
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

// decodeGeoScore turns a stored score back into the centre of its cell, as GEOPOS reports it.
func decodeGeoScore(score float64) (lon, lat float64) {
	lonR, latR := wgs84Ranges()
	area := geohashDecode(lonR, latR, geoBits{bits: uint64(score), step: geoStepMax})
	lon = (area.longitude.min + area.longitude.max) / 2
	lon = math.Min(math.Max(lon, geoLongMin), geoLongMax)
	lat = (area.latitude.min + area.latitude.max) / 2
	lat = math.Min(math.Max(lat, geoLatMin), geoLatMax)
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

// geoDistance is Redis's haversine distance in meters.
func geoDistance(lon1, lat1, lon2, lat2 float64) float64 {
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
type geoShape struct {
	lon, lat      float64
	circle        bool
	radius        float64
	width, height float64
	conversion    float64 // meters per unit
}

func (sh *geoShape) boundingBox() (minLon, minLat, maxLon, maxLat float64) {
	height, width := sh.conversion*sh.radius, sh.conversion*sh.radius
	if !sh.circle {
		height, width = sh.conversion*sh.height/2, sh.conversion*sh.width/2
	}
	latDelta := height / earthRadiusMeters / degToRad
	lonDeltaTop := width / earthRadiusMeters / math.Cos((sh.lat+latDelta)*degToRad) / degToRad
	lonDeltaBottom := width / earthRadiusMeters / math.Cos((sh.lat-latDelta)*degToRad) / degToRad
	if sh.lat < 0 {
		minLon, maxLon = sh.lon-lonDeltaBottom, sh.lon+lonDeltaBottom
	} else {
		minLon, maxLon = sh.lon-lonDeltaTop, sh.lon+lonDeltaTop
	}
	return minLon, sh.lat - latDelta, maxLon, sh.lat + latDelta
}

// searchCells is Redis's geohashCalculateAreasByShapeWGS84: the centre cell and its eight
// neighbours (zero where they cannot hold a match), in the order Redis visits them.
func (sh *geoShape) searchCells() []geoBits {
	minLon, minLat, maxLon, maxLat := sh.boundingBox()
	radius := sh.radius
	if !sh.circle {
		radius = math.Sqrt((sh.width/2)*(sh.width/2) + (sh.height/2)*(sh.height/2))
	}
	radius *= sh.conversion
	steps := geoEstimateSteps(radius, sh.lat)
	lonR, latR := wgs84Ranges()
	hash, _ := geohashEncode(lonR, latR, sh.lon, sh.lat, steps)
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
		hash, _ = geohashEncode(lonR, latR, sh.lon, sh.lat, steps)
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

// contains reports whether a point is in the shape, and its distance from the centre in meters.
func (sh *geoShape) contains(lon, lat float64) (float64, bool) {
	if sh.circle {
		d := geoDistance(lon, lat, sh.lon, sh.lat)
		return d, d <= sh.radius*sh.conversion
	}
	if geoLatDistance(lat, sh.lat) > sh.height*sh.conversion/2 {
		return 0, false
	}
	if geoDistance(lon, lat, sh.lon, lat) > sh.width*sh.conversion/2 {
		return 0, false
	}
	return geoDistance(sh.lon, sh.lat, lon, lat), true
}
