import type { GeoPoint } from '../../libs/geodesy';
import type { MapPoint } from '../../libs/contracts/order';

/** The drawing's size in its own units (the SVG's viewBox); it scales to the screen. */
export const MAP_WIDTH = 320;
export const MAP_HEIGHT = 200;
/** Room kept free around the points, so that markers and labels at the edge stay whole. */
export const MAP_PADDING = 24;

export interface ProjectedMap {
  width: number;
  height: number;
  pickup: MapPoint;
  dropoff: MapPoint;
  courier: MapPoint | null;
}

const round = (n: number) => Math.round(n * 10) / 10;

/**
 * The pickup, the drop-off and the courier drawn in a box of MAP_WIDTH × MAP_HEIGHT: an
 * equirectangular projection (a degree of longitude shrunk by the cosine of the latitude, so
 * that a city's shape is kept), scaled to the points' bounding box with one scale for both
 * axes and centred. North is up. Points that all coincide sit at the centre.
 */
export function projectMap(
  pickup: GeoPoint,
  dropoff: GeoPoint,
  courier: GeoPoint | null,
): ProjectedMap {
  const points = [pickup, dropoff, ...(courier ? [courier] : [])];
  const midLat =
    (Math.min(...points.map((p) => p.lat)) + Math.max(...points.map((p) => p.lat))) / 2;
  const shrink = Math.cos((midLat * Math.PI) / 180);
  const plane = points.map((p) => ({ x: p.lon * shrink, y: -p.lat }));
  const xs = plane.map((p) => p.x);
  const ys = plane.map((p) => p.y);
  const [minX, maxX, minY, maxY] = [
    Math.min(...xs),
    Math.max(...xs),
    Math.min(...ys),
    Math.max(...ys),
  ];
  const spanX = maxX - minX;
  const spanY = maxY - minY;
  const innerW = MAP_WIDTH - 2 * MAP_PADDING;
  const innerH = MAP_HEIGHT - 2 * MAP_PADDING;
  // A span of 0 fits any scale (x / 0 is Infinity); points closer than any scale can tell
  // apart (a span of 5e-324 overflows it) are drawn together in the middle, as one point is.
  const fit = Math.min(innerW / spanX, innerH / spanY);
  const scale = Number.isFinite(fit) ? fit : 0;
  // Centre the drawing: the axis with room to spare gets it on both sides.
  const offsetX = MAP_PADDING + (innerW - spanX * scale) / 2;
  const offsetY = MAP_PADDING + (innerH - spanY * scale) / 2;
  const [a, b, c] = plane.map((p) => ({
    x: round(offsetX + (p.x - minX) * scale),
    y: round(offsetY + (p.y - minY) * scale),
  }));
  return {
    width: MAP_WIDTH,
    height: MAP_HEIGHT,
    pickup: a,
    dropoff: b,
    courier: courier ? c : null,
  };
}
