// SatelliteCore is ControlCore (what parlourctl needs, without Foundation)
// and the daemon's own policy: whoever imports SatelliteCore sees both.
@_exported import ControlCore
