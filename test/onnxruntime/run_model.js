// Runs an ONNX model with ONNX Runtime's CPU provider (the npm package onnxruntime-node):
//   node run_model.js ORT_MODULE MODEL.onnx SPEC.json OUT.bin
// SPEC.json lists the inputs: {"inputs": [{"name", "type", "file", "dims"}]}, each file the
// input's raw little-endian bytes. Writes the first output's bytes to OUT.bin and prints its
// dims as JSON. (check_gather_block_quantized.py drives it.)
const [ortModule, model, specFile, outFile] = process.argv.slice(2);
const ort = require(ortModule);
const fs = require('fs');

const kArrays = {
  uint8: Uint8Array, int32: Int32Array, int64: BigInt64Array, float32: Float32Array,
  float16: Uint16Array
};

(async () => {
  const spec = JSON.parse(fs.readFileSync(specFile));
  const session = await ort.InferenceSession.create(model);
  const feeds = {};
  for (const t of spec.inputs) {
    const bytes = fs.readFileSync(t.file);
    const Array = kArrays[t.type];
    const data = new Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / Array.BYTES_PER_ELEMENT);
    feeds[t.name] = new ort.Tensor(t.type, data, t.dims);
  }
  const out = await session.run(feeds);
  const y = out[session.outputNames[0]];
  fs.writeFileSync(outFile, Buffer.from(y.data.buffer, y.data.byteOffset, y.data.byteLength));
  console.log(JSON.stringify(y.dims));
})().catch((e) => {
  console.error(String(e));
  process.exit(1);
});
