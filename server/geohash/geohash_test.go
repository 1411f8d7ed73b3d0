package geohash

import (
	"math"
	"testing"
)

// The engine's differential test compares GEO* replies with redis-server; these check the
// package alone against known values.
func TestScoreDecodeDistance(t *testing.T) {
	// Palermo and Catania, Redis's documentation example.
	lon, lat := 13.361389, 38.115556
	score := Score(lon, lat)
	if score != 3479099956230698 {
		t.Fatalf("Score(Palermo) = %d, want Redis's 3479099956230698", score)
	}
	dlon, dlat := Decode(float64(score))
	if math.Abs(dlon-lon) > 1e-5 || math.Abs(dlat-lat) > 1e-5 {
		t.Fatalf("Decode = %f,%f, want about %f,%f", dlon, dlat, lon, lat)
	}
	// GEODIST measures between stored positions: Redis replies 166274.1516 m.
	clon, clat := Decode(float64(Score(15.087269, 37.502669)))
	if d := Distance(dlon, dlat, clon, clat); math.Abs(d-166274.1516) > 0.001 {
		t.Fatalf("Distance(Palermo, Catania) = %.4f m, want 166274.1516", d)
	}
	if h := String(Decode(float64(score))); string(h[:]) != "sqc8b49rny0" {
		t.Fatalf("String(Palermo) = %s, want sqc8b49rny0", h[:])
	}
	sh := Shape{Lon: 15, Lat: 37, Circle: true, Radius: 200, Conversion: 1000}
	if _, in := sh.Contains(13.361389, 38.115556); !in {
		t.Fatal("Palermo is within 200 km of 15,37")
	}
	found := false
	for _, r := range sh.ScoreRanges() {
		if float64(score) >= r[0] && float64(score) < r[1] {
			found = true
		}
	}
	if !found {
		t.Fatal("no search range holds Palermo's score")
	}
}
