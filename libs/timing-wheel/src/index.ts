export { TimingWheel, type WheelHandle, type WheelStats } from './timing-wheel';
export { ExpiredBatch, type WheelEntry } from './expired-batch';
export { TimingWheelError, WheelErrorCode } from './wheel-error';
export { WHEEL_DEFAULTS, type ResolvedWheelOptions, type TimingWheelOptions } from './wheel-options';
