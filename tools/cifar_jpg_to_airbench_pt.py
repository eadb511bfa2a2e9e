"""Packs a CIFAR-10 image-folder copy (e.g. ../shared/data/cifar10-jpg) into the train.pt and
test.pt files that airbench94.py's CifarLoader (github.com/KellerJordan/cifar10-airbench) loads:
dicts {'images': uint8 N x 32 x 32 x 3 (HWC, RGB), 'labels': int64 N, 'classes': names}.

It exists to answer one question of issue 15: does the official airbench94 recipe, run on the
same decoded JPEGs that ringgrad trains on, also stop short of 94 %? (It did: README.md.)

Order: the image folders are grouped by class, but airbench94 initialises its whitening layer
from the first 5000 training images, a class mix in the official data; so the training set is
put in a fixed random order (seed 0). The test set keeps the folder order.

    /work/venv-torch/bin/python tools/cifar_jpg_to_airbench_pt.py SRC DST
"""
import argparse
import os

import numpy as np
import torch
from PIL import Image

CLASSES = ['airplane', 'automobile', 'bird', 'cat', 'deer',
           'dog', 'frog', 'horse', 'ship', 'truck']  # CIFAR-10's label order


def load_split(split_dir):
    if not os.path.isdir(split_dir):
        raise SystemExit(f'{split_dir}: no such folder (expected train/ and test/ in the source)')
    found = sorted(os.listdir(split_dir))
    if found != sorted(CLASSES):
        raise SystemExit(f'{split_dir}: expected the ten CIFAR-10 class folders, found {found}')
    images, labels = [], []
    for label, cls in enumerate(CLASSES):
        cls_dir = os.path.join(split_dir, cls)
        for name in sorted(os.listdir(cls_dir)):
            with Image.open(os.path.join(cls_dir, name)) as im:
                arr = np.asarray(im.convert('RGB'), dtype=np.uint8)
            if arr.shape != (32, 32, 3):
                raise SystemExit(f'{cls_dir}/{name}: expected a 32x32 image, got {arr.shape}')
            images.append(arr)
            labels.append(label)
    return np.stack(images), np.asarray(labels, dtype=np.int64)


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('src', help='folder with train/<class>/*.jpg and test/<class>/*.jpg')
    p.add_argument('dst', help='folder to write train.pt and test.pt into')
    a = p.parse_args()
    os.makedirs(a.dst, exist_ok=True)
    for split, shuffle in [('train', True), ('test', False)]:
        images, labels = load_split(os.path.join(a.src, split))
        if shuffle:
            perm = np.random.default_rng(0).permutation(len(labels))
            images, labels = images[perm], labels[perm]
        out = os.path.join(a.dst, split + '.pt')
        torch.save({'images': torch.from_numpy(np.ascontiguousarray(images)),
                    'labels': torch.from_numpy(labels), 'classes': list(CLASSES)}, out)
        hist = np.bincount(labels, minlength=10).tolist()
        print(f'{split}: wrote {out}: {len(labels)} images, labels per class {hist}', flush=True)


if __name__ == '__main__':
    main()
