// Four floats at a time through a pointer: RealFFT's butterflies and
// NoiseSuppressor's bins, which took half the time so.

extension UnsafeMutablePointer<Float> {
    /// The four floats from here.
    var four: SIMD4<Float> {
        get { UnsafeRawPointer(self).loadUnaligned(as: SIMD4<Float>.self) }
        nonmutating set { UnsafeMutableRawPointer(self).storeBytes(of: newValue, as: SIMD4<Float>.self) }
    }
}
