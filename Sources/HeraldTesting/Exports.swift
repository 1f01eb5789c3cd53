// A test of one role reaches the others through HeraldTesting: `import HeraldTesting` brings every
// Herald module (the gateway, the device, HeraldKit, the provider client, Core and Runtime), so a
// test target depends on the module it tests and on this one.
@_exported import HeraldCore
@_exported import HeraldDevice
@_exported import HeraldGateway
@_exported import HeraldKit
@_exported import HeraldProvider
@_exported import HeraldRuntime
